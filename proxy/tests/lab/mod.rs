//! A throwaway one-node cluster made of network namespaces, for the daemon tests:
//!
//! ```text
//!  client netns (172.30.0.10, .11) ──veth── node netns (eth0 172.30.0.2, br0 10.244.1.1/24)
//!                                            ├── etcd + kube-apiserver on 127.0.0.1 (svcnet-testcluster)
//!                                            ├── svcnet-proxy run (the real binary, as its ServiceAccount)
//!                                            └── br0 ──veth── pod netns pod1 10.244.1.10, pod2 .11, ...
//! ```
//!
//! With [`Opts::ipv6`] the lab is dual-stack: the same links also carry ULA IPv6 addresses (client
//! fd00:172:30::10, node fd00:172:30::2, br0 fd00:10:244:1::1/64, pods fd00:10:244:1::10, ::11, ...), the
//! Node lists both InternalIPs and podCIDRs, kube-apiserver gets an IPv4 and an IPv6 service range and
//! the proxy gets both cluster CIDRs.
//!
//! The control plane is the real one (v1.34, `svcnet-testcluster`), one per test, inside the node
//! namespace on its loopback: the proxy reaches it there, and nothing is connected to the root
//! namespace, which is why the test's writes go through the real kubectl run in the namespace (as admin,
//! [`api`]). No kube-controller-manager: the tests write EndpointSlices by hand for selector-less
//! Services (the EndpointSlice controller leaves those alone) and nothing needs Pods. The proxy runs with
//! the kubeconfig of `Component::Proxy`, so the RBAC in `manifests/base/proxy/rbac.yaml` is what it gets.
//!
//! Pods and the client run this test binary itself in helper mode (see [`helper`]): pods serve "<name>
//! <peer ip>" over TCP and UDP port 8080; the client connects and prints what it got. Every process is
//! killed and every namespace deleted on drop, also when a test fails.
#![allow(dead_code)]

pub mod api;
pub mod helper;
pub mod net;
mod proxy;

use std::path::PathBuf;
use std::process::Child;
use std::sync::OnceLock;
use std::time::Duration;

pub use svcnet_netns::Netns;
use svcnet_testcluster::{Cluster, Component, Options};

pub const NODE: &str = "node-a";
pub const NODE_IP: &str = "172.30.0.2";
pub const CLIENT_IP: &str = "172.30.0.10";
pub const CLIENT_IP2: &str = "172.30.0.11";
pub const BRIDGE_IP: &str = "10.244.1.1";
pub const NODE_IP6: &str = "fd00:172:30::2";
pub const CLIENT_IP6: &str = "fd00:172:30::10";
pub const BRIDGE_IP6: &str = "fd00:10:244:1::1";
/// Service ranges of a dual-stack lab (IPv4 first, the cluster's default family).
pub const SERVICE_CIDRS_DUAL: &str = "10.96.0.0/16,fd00:10:96::/108";
pub const POD_PORT: u16 = 8080;
/// etcd's client port on the node's loopback (svcnet-testcluster's layout), for compaction.
const ETCD_URL: &str = "http://127.0.0.1:2379";

/// A child process killed (SIGKILL) and reaped on drop.
pub struct Proc {
    pub name: String,
    pub child: Child,
}

impl Proc {
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A pod: its namespace and its IP (and IPv6 address in a dual-stack lab).
pub struct Pod {
    pub name: String,
    pub ip: String,
    pub ip6: Option<String>,
    pub ns: Netns,
}

/// Options for [`Lab::start`].
#[derive(Clone, Debug)]
pub struct Opts {
    pub pods: usize,
    pub min_sync: &'static str,
    pub sync_period: &'static str,
    /// Directory put first on the proxy's PATH (iptables wrappers).
    pub path_prefix: Option<PathBuf>,
    pub extra_args: Vec<String>,
    /// Commands run in the node namespace before the proxy starts (foreign rules).
    pub before_proxy: Vec<Vec<String>>,
    /// Dual-stack lab (see the module docs); IPv4 only otherwise.
    pub ipv6: bool,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            pods: 2,
            min_sync: "1s",
            sync_period: "10s",
            path_prefix: None,
            extra_args: vec![],
            before_proxy: vec![],
            ipv6: false,
        }
    }
}

/// The whole lab. Field order matters: processes are dropped (killed) before the namespaces.
pub struct Lab {
    pub proxy: Option<Proc>,
    pub cluster: Cluster,
    pub servers: Vec<Proc>,
    pub pods: Vec<Pod>,
    pub client: Netns,
    pub node: Netns,
    pub dir: tempfile::TempDir,
    pub opts: Opts,
    /// The proxy's ServiceAccount kubeconfig.
    kubeconfig: PathBuf,
    /// kube-apiserver was killed by [`Lab::stop_apiserver`] and not started again yet.
    apiserver_down: bool,
}

pub fn proxy_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_svcnet-proxy"))
}

/// Polls `f` every 100 ms until it returns `Some`, or panics with `what` after `timeout`.
#[track_caller]
pub fn wait_for<T>(what: &str, timeout: Duration, f: impl FnMut() -> Option<T>) -> T {
    svcnet_testcluster::wait::wait_for(what, timeout, Duration::from_millis(100), f)
}

/// Deletes the namespaces of test runs that were killed (SIGKILL skips every Drop), once per test
/// process: their rules and processes would otherwise stay on the machine. Every environment of the
/// proxy tests (this lab, the differential test's) calls it before it makes namespaces.
pub fn sweep_leftovers_once() {
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| {
        for name in svcnet_netns::sweep_dead() {
            eprintln!("removed leftover namespace {name} (its test process is gone)");
        }
    });
}

impl Lab {
    /// Builds the namespaces, starts pods and the control plane, creates the Node, and starts the proxy
    /// (waiting for its first sync). `None` (with a SKIPPED line) when namespaces are unavailable
    /// outside CI.
    pub fn start(tag: &str, opts: Opts) -> Option<Lab> {
        sweep_leftovers_once();
        let node = svcnet_netns::netns_or_skip(&format!("{tag}-n"))?;
        let client = Netns::new(&format!("{tag}-c")).expect("client netns");
        net::wire_node_and_client(&node, &client).expect("wire node and client");
        if opts.ipv6 {
            net::wire_node_and_client_v6(&node, &client).expect("wire node and client (IPv6)");
        }
        let cluster = Cluster::start_with(Options {
            netns: Some(node.name().to_owned()),
            controller_manager: false,
            service_cidr: if opts.ipv6 {
                SERVICE_CIDRS_DUAL.into()
            } else {
                Options::default().service_cidr
            },
            ..Options::default()
        })
        .expect("control plane in the node namespace");
        let kubeconfig = cluster
            .component_kubeconfig(Component::Proxy)
            .expect("the proxy's ServiceAccount kubeconfig");
        let mut lab = Lab {
            proxy: None,
            cluster,
            servers: vec![],
            pods: vec![],
            client,
            node,
            dir: tempfile::tempdir().expect("tempdir"),
            opts: opts.clone(),
            kubeconfig,
            apiserver_down: false,
        };
        for i in 0..opts.pods {
            let name = format!("pod{}", i + 1);
            let ip = format!("10.244.1.{}", 10 + i);
            // Same digits as the IPv4 address, for readable logs.
            let ip6 = opts.ipv6.then(|| format!("fd00:10:244:1::{}", 10 + i));
            let ns = Netns::new(&format!("{tag}-p{}", i + 1)).expect("pod netns");
            net::wire_pod(&lab.node, &ns, i, &ip).expect("wire pod");
            if let Some(ip6) = &ip6 {
                net::wire_pod_v6(&ns, ip6).expect("wire pod (IPv6)");
            }
            let server = helper::spawn_server(&ns, &name, ip6.is_some());
            lab.servers.push(server);
            lab.pods.push(Pod { name, ip, ip6, ns });
        }
        std::fs::create_dir_all(lab.payload_dir()).expect("payload dir");
        if opts.ipv6 {
            lab.api().create_dual_stack_node(NODE, NODE_IP, NODE_IP6);
        } else {
            lab.api().create_node(NODE, NODE_IP);
        }
        for cmd in &opts.before_proxy {
            let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            lab.node.ok(&args);
        }
        lab.start_proxy();
        lab.wait_first_sync();
        Some(lab)
    }

    pub fn payload_dir(&self) -> PathBuf {
        self.dir.path().join("payloads")
    }

    /// The kubeconfig the proxy runs with (its ServiceAccount's token).
    pub fn kubeconfig(&self) -> &std::path::Path {
        &self.kubeconfig
    }

    /// Kills kube-apiserver (SIGKILL, by its pid; etcd keeps the state) until
    /// [`Lab::start_apiserver`]: watches break and nothing answers on 6443.
    pub fn stop_apiserver(&mut self) {
        let pid = self.cluster.apiserver_pid().to_string();
        let out = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .output()
            .expect("run kill");
        assert!(out.status.success(), "kill {pid}: {out:?}");
        self.apiserver_down = true;
    }

    /// Starts kube-apiserver again (after [`Lab::stop_apiserver`], or a plain restart) on the same
    /// etcd; returns once it is ready. Its watch cache starts afresh at etcd's current revision.
    pub fn start_apiserver(&mut self) {
        self.cluster
            .restart_apiserver()
            .unwrap_or_else(|e| panic!("restarting kube-apiserver: {e}\n{}", self.cluster.log_tails(20)));
        self.apiserver_down = false;
    }

    /// Compacts etcd's history up to its current revision (physically) and returns that revision.
    /// `Cluster::compact_etcd` talks to etcd from this process, which cannot reach into the node
    /// namespace; this does the same through etcd's JSON gateway from inside it.
    pub fn compact_etcd(&self) -> i64 {
        let etcd = |path: &str, body: serde_json::Value| -> serde_json::Value {
            let (code, reply) = helper::http(
                &self.node,
                "POST",
                &format!("{ETCD_URL}{path}"),
                "application/json",
                &body.to_string(),
            );
            assert_eq!(code, 200, "etcd {path}: {reply}");
            serde_json::from_str(&reply).unwrap_or_else(|e| panic!("etcd {path}: {e}: {reply}"))
        };
        // Any range request answers with the header; "Lw==" is the key "/".
        let head = etcd(
            "/v3/kv/range",
            serde_json::json!({"key": "Lw==", "count_only": true}),
        );
        let rev: i64 = head["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("no header.revision in {head}"));
        etcd(
            "/v3/kv/compaction",
            serde_json::json!({"revision": rev.to_string(), "physical": true}),
        );
        rev
    }

    /// Writes as admin (kubectl in the node namespace).
    pub fn api(&self) -> api::Api {
        assert!(!self.apiserver_down, "kube-apiserver is stopped");
        api::Api {
            kubectl: self.cluster.admin_kubectl(),
        }
    }

    /// iptables-save of the node (all tables).
    pub fn save(&self) -> String {
        self.node.ok(&["iptables-save"])
    }

    /// ip6tables-save of the node (all tables).
    pub fn save6(&self) -> String {
        self.node.ok(&["ip6tables-save"])
    }

    pub fn pod(&self, name: &str) -> &Pod {
        self.pods.iter().find(|p| p.name == name).expect("pod")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("---- proxy.log ----\n{}", self.log("proxy.log"));
            eprintln!("---- control plane (tails) ----\n{}", self.cluster.log_tails(30));
        }
    }
}
