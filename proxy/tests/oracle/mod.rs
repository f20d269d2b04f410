//! The differential test's cluster: one real control plane and two identical nodes, one running
//! upstream `kube-proxy`, the other `svcnet-proxy run`, both in the same [`Mode`] (iptables: svcnet's
//! `--layout flat`; nftables: the only layout, upstream's):
//!
//! ```text
//!  cp netns: etcd + kube-apiserver on 192.168.251.1 (br-api)
//!    ├──veth── upstream netns: api0 192.168.251.2, eth0 10.140.0.3 + fd00:140::3, br0 10.76.1.1
//!    └──veth── svcnet   netns: api0 192.168.251.3, eth0 10.140.0.3 + fd00:140::3, br0 10.76.1.1
//! ```
//!
//! Both proxies see the same Node object (`node-1`, dual-stack addresses and podCIDRs, zone `z1`), get
//! the same flags, and use the same iptables and nft binaries. Nothing is linked to the root namespace; the
//! only traffic is to the API server. Every process is killed and every namespace deleted on drop.
#![allow(dead_code)]

pub mod compare;
pub mod compare_nft;
pub mod corpus;
mod net;
mod run;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use svcnet_netns::Netns;
use svcnet_testcluster::{Cluster, Component, Kubectl, Options};

use crate::lab::{self, Proc, helper};

pub const NODE: &str = "node-1";
pub const ZONE: &str = "z1";
pub const NODE_IP: &str = "10.140.0.3";
pub const NODE_IP6: &str = "fd00:140::3";
pub const CLUSTER_CIDRS: &str = "10.76.0.0/14,fd00:76::/48";
pub const POD_CIDRS: [&str; 2] = ["10.76.1.0/24", "fd00:76:1::/64"];
const SERVICE_CIDRS: &str = "10.96.0.0/16,fd00:10:96::/108";
const API_IP: &str = "192.168.251.1";
/// A kubectl call slower than this is reported (a loaded machine shows up in the step times).
const SLOW_CALL: Duration = Duration::from_secs(10);
/// Fast syncs, so hundreds of states fit in minutes; the periodic resync is left out of the run (an
/// hour), so most syncs after the first are partial on both sides.
const MIN_SYNC: &str = "100ms";
const SYNC_PERIOD: &str = "1h";
/// Flags that keep kube-proxy (and svcnet-proxy, which takes the same ones) off the kernel-global
/// conntrack sysctls (nf_conntrack_max, the hash size, the TCP timeouts). The rest kube-proxy's
/// iptables mode touches is per network namespace: it writes net.ipv4.conf.all.route_localnet and
/// only reads bridge-nf-call-iptables and nf_conntrack_tcp_be_liberal (pkg/proxy/iptables NewProxier).
const CONNTRACK_FLAGS: [&str; 3] = [
    "--conntrack-max-per-core=0",
    "--conntrack-tcp-timeout-established=0",
    "--conntrack-tcp-timeout-close-wait=0",
];

/// The proxy mode both nodes run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Iptables,
    Nftables,
}

impl Mode {
    pub fn flag(self) -> &'static str {
        match self {
            Mode::Iptables => "iptables",
            Mode::Nftables => "nftables",
        }
    }
}

/// Which proxy a node runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Upstream,
    Svcnet,
}

impl Side {
    pub fn label(self) -> &'static str {
        match self {
            Side::Upstream => "upstream kube-proxy",
            Side::Svcnet => "svcnet-proxy",
        }
    }
}

/// One node: its namespace and its proxy. Field order: the proxy dies before the namespace goes.
pub struct Node {
    pub side: Side,
    pub mode: Mode,
    pub proxy: Option<Proc>,
    pub ns: Netns,
    log: PathBuf,
}

/// The whole environment (drop order: proxies, control plane, namespaces).
pub struct Env {
    pub upstream: Node,
    pub svcnet: Node,
    pub cluster: Cluster,
    pub cp: Netns,
    pub dir: tempfile::TempDir,
}

impl Env {
    /// Builds the namespaces and the control plane, creates the Node and starts both proxies (waiting
    /// for their first syncs). `None` (with a SKIPPED line) when namespaces are unavailable outside CI.
    /// Both proxies run in `mode`; `flags` go to both, after the common ones.
    pub fn start(tag: &str, mode: Mode, flags: &[&str]) -> Option<Env> {
        lab::sweep_leftovers_once();
        let cp = svcnet_netns::netns_or_skip(&format!("{tag}-cp"))?;
        let up = Netns::new(&format!("{tag}-up")).expect("upstream node netns");
        let sv = Netns::new(&format!("{tag}-sv")).expect("svcnet node netns");
        net::wire_api_bridge(&cp, API_IP).expect("wire the API bridge");
        net::wire_node(&cp, &up, "nup", "192.168.251.2").expect("wire the upstream node");
        net::wire_node(&cp, &sv, "nsv", "192.168.251.3").expect("wire the svcnet node");
        let cluster = Cluster::start_with(Options {
            netns: Some(cp.name().to_owned()),
            ip: Some(API_IP.parse().expect("literal address")),
            controller_manager: false,
            service_cidr: SERVICE_CIDRS.into(),
            ..Options::default()
        })
        .expect("control plane in the cp namespace");
        let dir = tempfile::tempdir().expect("tempdir");
        let mut env = Env {
            upstream: Node::new(Side::Upstream, mode, up, dir.path()),
            svcnet: Node::new(Side::Svcnet, mode, sv, dir.path()),
            cluster,
            cp,
            dir,
        };
        env.create_node();
        let upstream_kubeconfig = env.kube_proxy_kubeconfig();
        let svcnet_kubeconfig = env
            .cluster
            .component_kubeconfig(Component::Proxy)
            .expect("svcnet-proxy's ServiceAccount kubeconfig");
        env.upstream.start(&upstream_kubeconfig, flags);
        env.svcnet.start(&svcnet_kubeconfig, flags);
        for node in [&mut env.upstream, &mut env.svcnet] {
            node.wait_first_sync();
        }
        Some(env)
    }

    pub fn admin(&self) -> Kubectl {
        self.cluster.admin_kubectl()
    }

    /// kubectl as admin; panics with its stderr on failure.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> String {
        let k = self.admin();
        let t0 = Instant::now();
        let out = match stdin {
            Some(s) => k.ok_stdin(args, s),
            None => k.ok(args),
        };
        if t0.elapsed() > SLOW_CALL {
            eprintln!(
                "slow: kubectl {} took {:.1} s",
                args.join(" "),
                t0.elapsed().as_secs_f64()
            );
        }
        out.unwrap_or_else(|e| panic!("kubectl {}: {e}", args.join(" ")))
    }

    /// The Node both proxies run as: dual-stack, the zone the generator's topology hints name.
    fn create_node(&self) {
        let node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE, "labels": {
                "kubernetes.io/hostname": NODE, "topology.kubernetes.io/zone": ZONE}},
            "spec": {"podCIDR": POD_CIDRS[0], "podCIDRs": POD_CIDRS},
        });
        self.kubectl(&["create", "-f", "-"], Some(&node.to_string()));
        let status = json!({"status": {"addresses": [
            {"type": "InternalIP", "address": NODE_IP},
            {"type": "InternalIP", "address": NODE_IP6},
            {"type": "Hostname", "address": NODE},
        ]}});
        self.kubectl(
            &[
                "patch",
                "node",
                NODE,
                "--subresource=status",
                "--type=merge",
                "-p",
                &status.to_string(),
            ],
            None,
        );
    }

    /// kube-proxy's identity as kubeadm sets it up: ServiceAccount kube-system/kube-proxy bound to the
    /// built-in ClusterRole system:node-proxier.
    fn kube_proxy_kubeconfig(&self) -> PathBuf {
        self.kubectl(
            &["create", "serviceaccount", "kube-proxy", "-n", "kube-system"],
            None,
        );
        self.kubectl(
            &[
                "create",
                "clusterrolebinding",
                "kube-proxy",
                "--clusterrole=system:node-proxier",
                "--serviceaccount=kube-system:kube-proxy",
            ],
            None,
        );
        self.cluster
            .service_account_kubeconfig("kube-system", "kube-proxy")
            .expect("kube-proxy's kubeconfig")
    }

    /// Waits until both proxies have synced the step that wrote `marker` last (see [`Node::settled`]);
    /// panics with both logs after `timeout`.
    pub fn wait_settled(&mut self, marker: &str, timeout: Duration) {
        let start = Instant::now();
        loop {
            let up = self.upstream.settled(marker);
            let sv = self.svcnet.settled(marker);
            if up && sv {
                return;
            }
            for node in [&mut self.upstream, &mut self.svcnet] {
                node.assert_alive();
            }
            assert!(
                start.elapsed() < timeout,
                "marker {marker} not synced within {timeout:?} (upstream: {up}, svcnet: {sv}; DNAT to the decoy {} means the proxy has not seen the Node's zone label)\n{}\n{}",
                corpus::DECOY,
                self.upstream.log_tail(40),
                self.svcnet.log_tail(40)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Node {
    fn new(side: Side, mode: Mode, ns: Netns, dir: &Path) -> Node {
        let log = dir.join(match side {
            Side::Upstream => "kube-proxy.log",
            Side::Svcnet => "svcnet-proxy.log",
        });
        Node {
            side,
            mode,
            proxy: None,
            ns,
            log,
        }
    }

    fn start(&mut self, kubeconfig: &Path, flags: &[&str]) {
        let log = std::fs::File::create(&self.log).expect("log file");
        let kubeconfig = kubeconfig.to_str().expect("utf-8 path");
        let common = [
            "--kubeconfig",
            kubeconfig,
            "--hostname-override",
            NODE,
            "--cluster-cidr",
            CLUSTER_CIDRS,
            "--iptables-min-sync-period",
            MIN_SYNC,
            "--iptables-sync-period",
            SYNC_PERIOD,
        ];
        let mut cmd = match self.side {
            Side::Upstream => {
                let bin = svcnet_testcluster::binaries()
                    .expect("the pinned Kubernetes build")
                    .kube_proxy();
                let mut c = self.ns.command(&[bin.to_str().expect("utf-8 path")]);
                c.args(["--proxy-mode", self.mode.flag(), "--v=2"]);
                c
            }
            Side::Svcnet => {
                let bin = env!("CARGO_BIN_EXE_svcnet-proxy");
                let mut c = self.ns.command(&[bin, "run"]);
                match self.mode {
                    Mode::Iptables => c.args(["--layout", "flat"]),
                    Mode::Nftables => c.args(["--proxy-mode", "nftables"]),
                };
                c.args(["--log-level", "info,svcnet_proxy=debug"]);
                c
            }
        };
        cmd.args(common)
            .args(CONNTRACK_FLAGS)
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.side.label()));
        self.proxy = Some(Proc {
            name: self.side.label().into(),
            child,
        });
    }

    fn assert_alive(&mut self) {
        let alive = self.proxy.as_mut().is_some_and(Proc::alive);
        assert!(alive, "{} exited\n{}", self.side.label(), self.log_tail(60));
    }

    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(n);
        format!(
            "---- {} log (last {n} lines) ----\n{}",
            self.side.label(),
            lines[from..].join("\n")
        )
    }

    fn wait_first_sync(&mut self) {
        let start = Instant::now();
        while !self.synced_once() {
            self.assert_alive();
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{}: no first sync within 60 s\n{}",
                self.side.label(),
                self.log_tail(60)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The proxy's metrics text (served on 127.0.0.1:10249 inside its namespace).
    pub fn metrics(&self) -> String {
        helper::http(
            &self.ns,
            "GET",
            "http://127.0.0.1:10249/metrics",
            "text/plain",
            "",
        )
        .1
    }

    /// Every step ends by moving the marker Service's endpoint to a new address (see
    /// [`corpus::MARKER`]): the step is synced once the rules DNAT to `marker` and not to the
    /// [`corpus::DECOY`] (the proxy knows the Node's zone), and no change is pending, i.e. every IP
    /// family finished a sync after its last queued change (upstream's gauges, which both proxies
    /// publish).
    pub fn settled(&self, marker: &str) -> bool {
        let to = |ip: &str| match self.mode {
            Mode::Iptables => format!("--to-destination {ip}:"),
            Mode::Nftables => format!("dnat to {ip}:"),
        };
        if !self.quiet() {
            return false;
        }
        let rules = self.save(false);
        rules.contains(&to(marker)) && !rules.contains(&to(corpus::DECOY))
    }

    fn quiet(&self) -> bool {
        let m = self.metrics();
        let queued = gauges(&m, "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds");
        let synced = gauges(&m, "kubeproxy_sync_proxy_rules_last_timestamp_seconds");
        !synced.is_empty()
            && queued
                .iter()
                .all(|(labels, q)| synced.iter().any(|(l, s)| l == labels && *s >= *q))
    }

    fn synced_once(&self) -> bool {
        let m = self.metrics();
        gauges(&m, "kubeproxy_sync_proxy_rules_last_timestamp_seconds")
            .iter()
            .any(|(_, t)| *t > 0.0)
    }

    /// iptables mode: `iptables-save` or `ip6tables-save` of the node (all tables); nftables mode:
    /// `nft list table ip|ip6 kube-proxy`.
    pub fn save(&self, ipv6: bool) -> String {
        match self.mode {
            Mode::Iptables => self
                .ns
                .ok(&[if ipv6 { "ip6tables-save" } else { "iptables-save" }]),
            Mode::Nftables => {
                let family = if ipv6 { "ip6" } else { "ip" };
                self.ns.ok(&["nft", "list", "table", family, "kube-proxy"])
            }
        }
    }
}

/// Samples of one metric: (labels, value).
fn gauges(metrics: &str, name: &str) -> Vec<(String, f64)> {
    metrics
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = match rest.strip_prefix('{') {
                Some(r) => {
                    let (labels, v) = r.split_once('}')?;
                    (labels.to_string(), v)
                }
                None => (String::new(), rest),
            };
            Some((labels, value.trim().parse().ok()?))
        })
        .collect()
}

/// A JSON `List` of objects, for one `kubectl apply`.
pub fn list(items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}
