//! The e2e harness: a [`Cluster`] (how the cluster is made: the local lab) and a [`Scenario`] that runs
//! named steps against it. A failing step prints its name, then the cluster's diagnostics (every node's
//! iptables-save, the fake GCE's state, the API objects, log tails), and fails the test with the step
//! name. Scenario code only talks to the [`Cluster`] trait.
#![allow(clippy::unwrap_used, dead_code)]

pub mod lab;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Where a request is made from.
#[derive(Clone, Copy, Debug)]
pub enum From<'a> {
    /// The outside client (inside every Service's loadBalancerSourceRanges the scenarios set).
    Client,
    /// A second outside client with another source address.
    Client2,
    /// A node (by name): its own network namespace, where the proxy's rules apply.
    Node(&'a str),
    /// A VM inside the VPC that is not a node (an internal load balancer's client).
    Vm,
}

/// What a step may need beyond Kubernetes and the fake GCE; a cluster that lacks it says why.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Feature {
    /// The network enforces GCE firewall rules (the lab's VPC router).
    GceFirewall,
    /// The network sends LB traffic only to pool members that pass the pool's health check.
    HealthCheckedLb,
    /// Nodes can join and leave.
    NodeLifecycle,
    /// The real gcloud can be run against the cluster's GCE (an operator's steps).
    Gcloud,
}

/// Which proxy serves a node (the takeover step swaps them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Proxy {
    Svcnet,
    /// Upstream kube-proxy of the control plane's release.
    KubeProxy,
}

/// Steady traffic started by [`Cluster::load`]; [`LoadRun::finish`] stops it and returns one JSON tally
/// per target (`new_ok`, `new_failed`, `long`, `long_broken`, `pings`, `errors`).
pub struct LoadRun {
    pub child: std::process::Child,
    pub stdout: std::io::BufReader<std::process::ChildStdout>,
    pub stop_file: std::path::PathBuf,
}

impl LoadRun {
    pub fn finish(mut self) -> Vec<Value> {
        use std::io::BufRead;
        std::fs::write(&self.stop_file, b"").unwrap();
        let status = self.child.wait().unwrap();
        let _ = std::fs::remove_file(&self.stop_file);
        let tallies: Vec<Value> = (&mut self.stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str(&l).ok())
            .collect();
        assert!(status.success(), "the load generator failed: {status}");
        tallies
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Component {
    CloudController,
    ApiServer,
}

/// The image the lab's nodes run (its hostname server).
pub const IMAGE: &str = "gcr.io/google_containers/serve_hostname";

/// What scenarios need from a cluster.
pub trait Cluster {
    /// `local`.
    fn kind(&self) -> &'static str;
    /// Why this cluster cannot run steps needing `f` (None: it can).
    fn lacks(&self, f: Feature) -> Option<&'static str>;
    /// A JSON call to the Kubernetes API as cluster-admin (PATCH is a merge patch); Err carries status
    /// and body.
    fn api(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String>;
    /// A JSON call to the fake GCE (`/compute/v1/...` and the admin `/_fake/...`).
    fn gce(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String>;
    /// The real gcloud pointed at the fake GCE, with a config of its own in the cluster's directory:
    /// stdout, or Err with stderr.
    fn gcloud(&self, args: &[&str]) -> Result<String, String>;
    /// The real kubectl (the server's release) against the cluster's API, as cluster-admin.
    fn kubectl(&self, args: &[&str]) -> Result<String, String>;
    /// kubectl with the kubeconfig the running `component` (`svcnet-proxy`, `svcnet-cloud-controller`)
    /// reads: (exit success, stdout).
    fn kubectl_as(&self, component: &str, args: &[&str]) -> (bool, String);
    /// HTTP GET; the body (trimmed) on 200, None otherwise (timeouts included).
    fn get(&self, from: From<'_>, url: &str) -> Option<String>;
    /// One UDP datagram to `addr` (`ip:port`); the reply (trimmed) or None.
    fn udp(&self, from: From<'_>, addr: &str) -> Option<String>;
    /// `kubectl create deployment <app> --image=<IMAGE> --port=<port> --replicas=N`; returns once N pods
    /// run (their hostname server answers their name over TCP/HTTP and UDP).
    fn run_pods(&self, app: &str, replicas: usize, port: u16);
    /// `kubectl scale deployment <app> --replicas N`; returns once exactly N pods run, none terminating.
    fn scale(&self, app: &str, replicas: usize);
    /// (name, pod IP, node) of each running, not terminating pod of `app` as the nodes run them (the
    /// lab: its agent's record, independent of the API), by name.
    fn pods(&self, app: &str) -> Vec<(String, String, String)>;
    /// (name, internal IP) of every node.
    fn nodes(&self) -> Vec<(String, String)>;
    /// Adds a node; its name.
    fn add_node(&self) -> String;
    fn remove_node(&self, name: &str);
    /// Stops `p` on `node` the way its DaemonSet pod is deleted (SIGTERM), leaving its rules in place.
    fn stop_proxy(&self, node: &str, p: Proxy);
    /// Starts `p` on `node` (the other must be stopped) and returns once it has synced.
    fn start_proxy(&self, node: &str, p: Proxy);
    /// `svcnet-proxy cleanup ARGS` run on the node, as an operator would; its output.
    fn proxy_cleanup(&self, node: &str, args: &[&str]) -> String;
    /// `iptables-save` (`ip6tables-save` with `v6`) of the node: every table.
    fn iptables_save(&self, node: &str, v6: bool) -> String;
    /// Starts steady traffic from `from` to each `ip:port` target: a new connection every 20 ms and
    /// `long` held connections per target; returns once the held connections are up.
    fn load(&self, from: From<'_>, targets: &[String], long: usize) -> LoadRun;
    /// Kills a control-plane component (a crash, no clean shutdown).
    fn stop(&self, c: Component);
    /// Starts it again as it was.
    fn start(&self, c: Component);
    /// Compacts etcd up to its current revision (returned): a watch resuming from before it gets 410.
    fn compact_etcd(&self) -> i64;
    /// Everything a component (`proxy-<node>`, `cloud-controller`, ...) has logged so far.
    fn log(&self, component: &str) -> String;
    /// The node IPs the network currently sends `lb_ip` to (the healthy target pool members); an
    /// IPv6 rule's `ADDR/96`: the nodes' IPv6 addresses.
    fn lb_backends(&self, lb_ip: &str) -> Vec<String>;
    /// The network's route for `lb_ip` (an address, or an IPv6 rule's `ADDR/96`) as `ip route`
    /// prints it (next hops with their weights).
    fn lb_route(&self, lb_ip: &str) -> String;
    /// Source addresses of [`From::Client`] and [`From::Client2`].
    fn client_ips(&self) -> (String, String);
    /// Prints what a failure needs (stderr).
    fn diagnose(&self);
    /// Tears everything down; checks nothing is left (panics otherwise).
    fn down(&mut self);
}

/// The lab with 2 nodes; None when the test must be SKIPPED (no network namespaces outside CI).
pub fn cluster() -> Option<Box<dyn Cluster>> {
    lab::Lab::up(2).map(|l| Box::new(l) as Box<dyn Cluster>)
}

/// Named steps over one cluster.
pub struct Scenario {
    pub c: Box<dyn Cluster>,
    n: usize,
    start: Instant,
    /// Steps not run (cluster lacks a feature), printed at the end; never counted as passed.
    pub skipped: Vec<String>,
}

impl Scenario {
    pub fn new(c: Box<dyn Cluster>) -> Self {
        Scenario {
            c,
            n: 0,
            start: Instant::now(),
            skipped: Vec::new(),
        }
    }

    /// [`Scenario::step`] when the cluster has `needs`; otherwise prints `SKIPPED` with the reason.
    pub fn step_needing(&mut self, needs: Feature, name: &str, f: impl FnOnce(&dyn Cluster)) {
        match self.c.lacks(needs) {
            None => self.step(name, f),
            Some(why) => {
                self.n += 1;
                println!(
                    "==> step {}: {name}\n    SKIPPED on {}: {why}",
                    self.n,
                    self.c.kind()
                );
                self.skipped.push(format!("{name} ({why})"));
            }
        }
    }

    /// Runs one step; on failure prints the step, the diagnostics, and fails with the step's name.
    pub fn step<T>(&mut self, name: &str, f: impl FnOnce(&dyn Cluster) -> T) -> T {
        self.n += 1;
        let t = Instant::now();
        println!("==> step {}: {name}", self.n);
        match catch_unwind(AssertUnwindSafe(|| f(self.c.as_ref()))) {
            Ok(v) => {
                println!("    ok ({:.1}s)", t.elapsed().as_secs_f64());
                v
            }
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                eprintln!(
                    "\n#### step {} FAILED: {name}\n#### {msg}\n#### diagnostics follow",
                    self.n
                );
                self.c.diagnose();
                eprintln!("#### end of diagnostics for step {}: {name}", self.n);
                panic!("step {} \"{name}\" failed: {msg}", self.n);
            }
        }
    }

    pub fn total(&self) -> Duration {
        self.start.elapsed()
    }
}

/// Polls `f` every 300 ms (each probe may run processes in the lab) until it returns Some; panics
/// with `what` after `timeout`.
#[track_caller]
pub fn wait_for<T>(what: &str, timeout: Duration, f: impl FnMut() -> Option<T>) -> T {
    svcnet_testcluster::wait::wait_for(what, timeout, Duration::from_millis(300), f)
}

/// The CLI's expectation: the API call succeeds.
pub fn api(c: &dyn Cluster, method: &str, path: &str, body: Option<&Value>) -> Value {
    c.api(method, path, body)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

pub fn gce(c: &dyn Cluster, method: &str, path: &str, body: Option<&Value>) -> Value {
    c.gce(method, path, body)
        .unwrap_or_else(|e| panic!("GCE {method} {path}: {e}"))
}

/// The fake GCE's resources of one collection (`forwardingRules`, `targetPools`, ...).
pub fn gce_objects(c: &dyn Cluster, collection: &str) -> Vec<Value> {
    gce(c, "GET", "/_fake/state", None)[collection]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The last path segment of a GCE link.
pub fn last(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}
