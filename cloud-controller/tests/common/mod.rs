//! End-to-end harness: the real Kubernetes control plane (etcd + kube-apiserver from the pinned
//! build, through `svcnet_testcluster`), the REAL binary of svcnet-fake-gce on 127.0.0.1:0, and
//! svcnet-cloud-controller under its manifests' ServiceAccount and RBAC.
//!
//! The fake GCE lives in another package, so Cargo does not build it for this package's tests.
//! [`bins`] builds it once per test process (`svcnet_testcluster::siblings`: same profile and target
//! directory; Cargo releases its lock before it runs tests) and takes the binary from there.
//! The controller itself is `env!("CARGO_BIN_EXE_svcnet-cloud-controller")`.
#![allow(dead_code, clippy::unwrap_used)]

pub mod gcloud;
pub mod ipv6;
pub mod l4;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Node, Service};
use kube::CustomResourceExt;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use svcnet_testcluster::announce;
use svcnet_testcluster::http::{Reply, Request};
use svcnet_testcluster::{Cluster, Component, Options};

pub const PROJECT: &str = "svcnet-e2e";
pub const REGION: &str = "us-central1";
pub const ZONE: &str = "us-central1-b";
pub const ZONE_C: &str = "us-central1-c";
pub const CLUSTER: &str = "svcnet-e2e";
pub const NODE_TAG: &str = "svcnet-node";

pub struct Bins {
    pub fake_gce: PathBuf,
}

/// Builds (once per process) and locates the fake GCE.
pub fn bins() -> &'static Bins {
    static BINS: OnceLock<Bins> = OnceLock::new();
    BINS.get_or_init(|| {
        let dir = svcnet_testcluster::siblings::build(&["svcnet-fake-gce"])
            .unwrap_or_else(|e| panic!("building svcnet-fake-gce: {e}"));
        let b = Bins {
            fake_gce: dir.join("svcnet-fake-gce"),
        };
        assert!(b.fake_gce.exists(), "missing {}", b.fake_gce.display());
        b
    })
}

/// Spawns `cmd` and reads the `listening on ADDR` line from its stdout.
fn spawn_listening(mut cmd: Command) -> (Child, String) {
    announce::spawn(cmd.stderr(Stdio::inherit()), announce::FAKE_GCE)
        .unwrap_or_else(|e| panic!("starting the fake GCE: {e}"))
}

/// The real control plane of one test: etcd and kube-apiserver with RBAC on.
///
/// No kube-controller-manager: nothing here needs its controllers, and its node IPAM would hand
/// out podCIDRs the tests did not ask for (a node created without one must stay without one, and
/// so without a route). Tests set podCIDRs explicitly, as node IPAM would.
pub struct ApiServer {
    pub cluster: Cluster,
    /// `https://<ip>:6443`.
    pub addr: String,
    /// The controller's identity: ServiceAccount kube-system/svcnet-cloud-controller with the
    /// ClusterRole and Role of `manifests/base/cloud-controller/rbac.yaml`.
    controller_kubeconfig: PathBuf,
}

impl ApiServer {
    pub fn start() -> Self {
        Self::start_with_service_cidr(&Options::default().service_cidr)
    }

    /// With `--service-cluster-ip-range` `cidrs` (an IPv4 and an IPv6 range: dual-stack Services).
    pub fn start_with_service_cidr(cidrs: &str) -> Self {
        let cluster = Cluster::start_with(Options {
            controller_manager: false,
            service_cidr: cidrs.to_owned(),
            ..Options::default()
        })
        .expect("start the control plane");
        let controller_kubeconfig = cluster
            .component_kubeconfig(Component::CloudController)
            .expect("svcnet-cloud-controller kubeconfig");
        ApiServer {
            addr: cluster.server(),
            cluster,
            controller_kubeconfig,
        }
    }

    /// The kubeconfig the controller under test runs with (its manifests' RBAC, not admin).
    pub fn kubeconfig(&self) -> PathBuf {
        self.controller_kubeconfig.clone()
    }

    /// Cluster-admin, for the test's own reads and writes.
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.cluster.admin_kubeconfig().to_path_buf()
    }

    /// A client as cluster-admin.
    pub async fn client(&self) -> kube::Client {
        kube_client(&self.admin_kubeconfig()).await
    }

    /// A client with the controller's identity (to check what its RBAC allows).
    pub async fn controller_client(&self) -> kube::Client {
        kube_client(&self.controller_kubeconfig).await
    }

    /// Restarts kube-apiserver (same etcd, same address): every watch breaks.
    pub fn restart(&mut self) {
        self.cluster.restart_apiserver().expect("restart kube-apiserver");
    }

    /// Compacts etcd to its current revision: a watch resuming from before it gets 410 Gone.
    pub fn compact(&self) -> i64 {
        self.cluster.compact_etcd().expect("compact etcd")
    }
}

async fn kube_client(kubeconfig: &Path) -> kube::Client {
    svcnet_core::tls::install_crypto_provider();
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    kube::Client::try_from(cfg).expect("client")
}

pub struct FakeGce {
    child: Child,
    pub port: u16,
}

impl FakeGce {
    pub fn start(extra: &[&str]) -> Self {
        let mut cmd = Command::new(&bins().fake_gce);
        cmd.args([
            "--listen",
            "127.0.0.1:0",
            "--project",
            PROJECT,
            "--region",
            REGION,
        ])
        .args(["--zones", &format!("{ZONE},{ZONE_C}")])
        .args(extra);
        let (child, addr) = spawn_listening(cmd);
        let port = addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port");
        FakeGce { child, port }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        http(self.port, method, path, body)
    }

    pub fn admin(&self, method: &str, what: &str, body: Option<&Value>) -> Value {
        let (s, v) = self.call(method, &format!("/_fake/{what}"), body);
        assert_eq!(s, 200, "admin {method} {what}: {v}");
        v
    }

    pub fn add_instance(&self, name: &str, zone: &str) -> Value {
        self.admin(
            "POST",
            "instances",
            Some(&json!({"name": name, "zone": zone, "tags": [NODE_TAG], "machineType": "e2-medium"})),
        )
    }

    pub fn state(&self) -> Value {
        self.admin("GET", "state", None)
    }

    /// Names of every resource of `kind` (a key of `/_fake/state`).
    pub fn names(&self, kind: &str) -> Vec<String> {
        let st = self.state();
        let mut v: Vec<String> = st[kind]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str().map(str::to_owned))
            .collect();
        v.sort();
        v
    }

    pub fn find(&self, kind: &str, name: &str) -> Option<Value> {
        self.state()[kind]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["name"] == name)
            .cloned()
    }

    /// On the Compute API only: 20% 503, 10% 429, 10% 403 rateLimitExceeded and 10% of POSTs'
    /// operations ending DONE with a 503, each seeded from `seed`.
    pub fn inject_api_faults(&self, seed: u64) {
        let api_only = json!({"pathRegex": "^/compute/v1/"});
        for (i, extra) in [
            json!({"fraction": 0.2, "status": 503}),
            json!({"fraction": 0.1, "status": 429}),
            json!({"fraction": 0.1, "status": 403, "reason": "rateLimitExceeded"}),
            json!({"fraction": 0.1, "status": 503, "mode": "operation", "method": "POST"}),
        ]
        .into_iter()
        .enumerate()
        {
            let mut f = api_only.clone();
            f.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            f["seed"] = json!(i as u64 + seed);
            self.admin("POST", "faults", Some(&f));
        }
    }

    pub fn clear_calls(&self) {
        self.admin("DELETE", "calls", None);
    }

    /// (total, mutating) compute calls since the last clear.
    pub fn calls(&self) -> (u64, u64) {
        let v = self.admin("GET", "calls", None);
        (
            v["total"].as_u64().unwrap_or(0),
            v["mutating"].as_u64().unwrap_or(0),
        )
    }

    pub fn mutating_calls(&self) -> Vec<String> {
        let v = self.admin("GET", "calls", None);
        v["calls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["mutating"] == true)
            .map(|c| {
                format!(
                    "{} {}",
                    c["method"].as_str().unwrap_or(""),
                    c["path"].as_str().unwrap_or("")
                )
            })
            .collect()
    }
}

impl Drop for FakeGce {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One running controller process.
pub struct Controller {
    child: Option<Child>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl Controller {
    /// The harness's flags (fast periods, short lease) plus `extra`; a flag given in `extra`
    /// replaces the harness's value (clap refuses a flag given twice).
    pub fn start(api: &ApiServer, gce: &FakeGce, extra: &[&str]) -> Self {
        let zones = format!("{ZONE},{ZONE_C}");
        let endpoint = gce.endpoint();
        let defaults: [(&str, &str); 13] = [
            ("--project", PROJECT),
            ("--region", REGION),
            ("--zones", &zones),
            ("--network", "default"),
            ("--cluster-name", CLUSTER),
            ("--node-tags", NODE_TAG),
            ("--gce-endpoint", &endpoint),
            ("--gce-poll-ms", "50"),
            ("--route-resync-seconds", "2"),
            ("--node-monitor-seconds", "1"),
            ("--leader-elect-lease-duration-seconds", "3"),
            ("--leader-elect-grace-seconds", "1"),
            ("--metrics-addr", ""),
        ];
        let mut args: Vec<String> = Vec::new();
        for (flag, value) in defaults {
            if extra.contains(&flag) {
                continue;
            }
            args.push(flag.into());
            if flag == "--metrics-addr" {
                // A free port for /metrics (bound and released: a tiny race, fine on loopback).
                let port = std::net::TcpListener::bind("127.0.0.1:0")
                    .unwrap()
                    .local_addr()
                    .unwrap()
                    .port();
                args.push(format!("127.0.0.1:{port}"));
            } else {
                args.push(value.into());
            }
        }
        args.push("--kubeconfig".into());
        args.push(api.kubeconfig().display().to_string());
        args.extend(extra.iter().map(|s| s.to_string()));
        Self::start_raw(args, &[])
    }

    /// Exactly these arguments (and extra environment), nothing added.
    pub fn start_raw(args: Vec<String>, env: &[(&str, &str)]) -> Self {
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut c = Controller {
            child: None,
            args,
            env,
        };
        c.spawn();
        c
    }

    pub fn spawn(&mut self) {
        let child = Command::new(env!("CARGO_BIN_EXE_svcnet-cloud-controller"))
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .env(
                "SVCNET_LOG",
                std::env::var("SVCNET_LOG").unwrap_or_else(|_| "info,kube=warn".into()),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn svcnet-cloud-controller");
        self.child = Some(child);
    }

    /// SIGKILL: no chance to release the lease or finish a call.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Controller {
    /// The `/metrics` text of this controller.
    pub fn metrics(&self) -> String {
        let i = self
            .args
            .iter()
            .position(|a| a == "--metrics-addr")
            .expect("metrics flag");
        let port: u16 = self.args[i + 1].rsplit(':').next().unwrap().parse().unwrap();
        request(port, Request::new("GET", "/metrics", HTTP_TIMEOUT)).text()
    }
}

/// One HTTP/1.1 exchange with `Connection: close`: the status and the body as JSON (`Null` when it
/// is empty or not JSON).
pub fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let body = body.map(Value::to_string).unwrap_or_default();
    let reply = request(
        port,
        Request::new(method, path, HTTP_TIMEOUT).with_body(body.as_bytes()),
    );
    (reply.status, reply.json())
}

/// Bounds every request: an answer that never comes fails the test instead of hanging it.
const HTTP_TIMEOUT: Duration = Duration::from_secs(120);

fn request(port: u16, req: Request<'_>) -> Reply {
    svcnet_testcluster::http::request(&format!("127.0.0.1:{port}"), req)
        .unwrap_or_else(|e| panic!("{} {}: {e}", req.method, req.path))
}

/// Polls `f` until it returns Some, or panics with `what` after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub const WAIT: Duration = Duration::from_secs(60);

/// The CloudLoadBalancer CRD, so the controller can write its records; returns once the server
/// reports it Established (before that its resources are not served).
pub async fn install_crd(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = svcnet_crds::CloudLoadBalancer::crd();
    let name = crd.metadata.name.clone().expect("CRD name");
    api.create(&PostParams::default(), &crd)
        .await
        .expect("create CRD");
    eventually("CloudLoadBalancer CRD Established", WAIT, || {
        let api = api.clone();
        let name = name.clone();
        async move {
            let crd = api.get(&name).await.ok()?;
            crd.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        }
    })
    .await;
}

/// A Node object as kubelet + node controller leave it: providerID, Ready, optional pod CIDR.
pub fn node(name: &str, zone: &str, pod_cidr: Option<&str>) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {
            "providerID": format!("gce://{PROJECT}/{zone}/{name}"),
            "podCIDR": pod_cidr,
            "podCIDRs": pod_cidr.map(|c| vec![c]),
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap()
}

/// Creates the instance in the fake and the Node in the API.
pub async fn add_node(
    client: &kube::Client,
    gce: &FakeGce,
    name: &str,
    zone: &str,
    pod_cidr: Option<&str>,
) -> Node {
    gce.add_instance(name, zone);
    let api: Api<Node> = Api::all(client.clone());
    api.create(&PostParams::default(), &node(name, zone, pod_cidr))
        .await
        .expect("create node")
}

pub fn lb_service(name: &str, ports: &[i32]) -> Service {
    let ports: Vec<Value> = ports
        .iter()
        .map(|p| json!({"name": format!("p{p}"), "port": p, "protocol": "TCP", "targetPort": p}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"type": "LoadBalancer", "selector": {"app": name}, "ports": ports}
    }))
    .unwrap()
}

/// `a` + uid without dashes, cut to 32 (the LB name).
pub fn lb_name(svc: &Service) -> String {
    let uid = svc.metadata.uid.clone().unwrap();
    let mut n: String = std::iter::once('a')
        .chain(uid.chars().filter(|c| *c != '-'))
        .collect();
    n.truncate(32);
    n
}

/// The cluster ID the controller persisted.
pub async fn cluster_id(client: &kube::Client) -> String {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    eventually("cluster ID ConfigMap", WAIT, || {
        let api = api.clone();
        async move {
            let cm = api.get_opt("ingress-uid").await.ok().flatten()?;
            cm.data?.get("uid").cloned()
        }
    })
    .await
}

pub fn ingress_ip(svc: &Service) -> Option<String> {
    svc.status
        .as_ref()?
        .load_balancer
        .as_ref()?
        .ingress
        .as_ref()?
        .first()?
        .ip
        .clone()
}

/// Waits for the Service's ingress IP.
pub async fn wait_ingress(client: &kube::Client, name: &str) -> (Service, String) {
    wait_ingress_within(client, name, WAIT).await
}

/// Waits up to `timeout` for the Service's ingress IP.
pub async fn wait_ingress_within(client: &kube::Client, name: &str, timeout: Duration) -> (Service, String) {
    let api: Api<Service> = Api::namespaced(client.clone(), "default");
    eventually(&format!("ingress IP of {name}"), timeout, || {
        let api = api.clone();
        async move {
            let s = api.get(name).await.ok()?;
            let ip = ingress_ip(&s)?;
            Some((s, ip))
        }
    })
    .await
}

/// Notes of the Warning events regarding `name` in `default`.
pub async fn warnings(client: &kube::Client, name: &str) -> Vec<String> {
    let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), "default");
    let list = api.list(&Default::default()).await.expect("events");
    list.items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .filter_map(|e| e.note)
        .collect()
}

/// Reasons of the events regarding `name` in `default`.
pub async fn event_reasons(client: &kube::Client, name: &str) -> Vec<String> {
    let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), "default");
    let list = api.list(&Default::default()).await.expect("events");
    list.items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .filter_map(|e| e.reason)
        .collect()
}

/// The fake's collections a target-pool LB's objects live in.
pub const TARGET_POOL_KINDS: [&str; 5] = [
    "addresses",
    "firewalls",
    "httpHealthChecks",
    "targetPools",
    "forwardingRules",
];

/// The fake's collections a target-pool or internal LB's objects live in.
pub const TARGET_POOL_AND_ILB_KINDS: [&str; 8] = [
    "addresses",
    "firewalls",
    "httpHealthChecks",
    "healthChecks",
    "targetPools",
    "forwardingRules",
    "backendServices",
    "instanceGroups",
];

/// `kind/name` of every object the fake holds in the collections `kinds`, sorted.
pub fn inventory(gce: &FakeGce, kinds: &[&str]) -> Vec<String> {
    let st = gce.state();
    let mut out: Vec<String> = kinds
        .iter()
        .flat_map(|kind| {
            st[*kind]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |r| format!("{kind}/{}", r["name"].as_str().unwrap_or("")))
        })
        .collect();
    out.sort();
    out
}

/// Everything the fake holds that a load balancer named `lb` could own.
pub fn lb_objects(gce: &FakeGce, lb: &str) -> Vec<String> {
    inventory(gce, &TARGET_POOL_KINDS)
        .into_iter()
        .filter(|o| {
            let (kind, name) = o.split_once('/').unwrap_or_default();
            name.contains(lb)
                || (kind == "httpHealthChecks" || kind == "firewalls") && name.starts_with("k8s-")
        })
        .collect()
}
