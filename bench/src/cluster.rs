//! The cloud controller's world as real processes: the real etcd + kube-apiserver (svcnet-testcluster,
//! on a loopback address of its own; the bench's own requests go through `kubectl proxy`, plain HTTP on
//! 127.0.0.1:0), `svcnet-fake-gce` (the Compute API test double) and `svcnet-cloud-controller` under its
//! ServiceAccount's RBAC. Every process is killed when the [`Cluster`] drops; logs go to a temporary
//! directory.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::error::BenchError;
use crate::http::{self, get_json, request};
use crate::procs::{self, Bins, Proc, spawn_kubectl_proxy};
use svcnet_testcluster::{Cluster as ControlPlane, Component, Options};

pub const PROJECT: &str = "svcnet-bench";
pub const REGION: &str = "us-central1";
pub const ZONE: &str = "us-central1-b";
pub const CLUSTER: &str = "svcnet-bench";
pub const NODE_TAG: &str = "svcnet-bench-node";

pub struct Cluster {
    // Drop order: controller first, so it never sees its API or GCE vanish mid-call.
    pub controller: Option<Proc>,
    /// `kubectl proxy` in front of the API server (`api`); held so that it dies with the cluster.
    _api_proxy: Proc,
    pub control_plane: ControlPlane,
    /// The controller's kubeconfig: its ServiceAccount, the manifests' RBAC.
    controller_kubeconfig: PathBuf,
    pub fake_gce: Proc,
    pub api: String,
    pub gce: String,
    /// Logs and the kubeconfig.
    pub dir: PathBuf,
    tmp: Option<tempfile::TempDir>,
    bins: Bins,
}

impl Cluster {
    /// Starts the real control plane (no controller manager: the bench writes what it needs) and the
    /// fake GCE (operations take `op_latency_ms`).
    pub fn start(bins: &Bins, op_latency_ms: u64) -> Result<Cluster, BenchError> {
        let tmp = tempfile::Builder::new()
            .prefix("svcnet-bench-cluster-")
            .tempdir()
            .map_err(|e| BenchError::io("tempdir", e))?;
        let dir = tmp.path();
        let control_plane = ControlPlane::start_with(Options {
            controller_manager: false,
            ..Options::default()
        })
        .map_err(|e| BenchError::Check(format!("control plane: {e}")))?;
        let controller_kubeconfig = control_plane
            .component_kubeconfig(Component::CloudController)
            .map_err(|e| BenchError::Check(format!("controller kubeconfig: {e}")))?;
        let mut cmd = control_plane
            .admin_kubectl()
            .command(&["proxy", "--address=127.0.0.1", "--port=0"]);
        let (api_proxy, api) = spawn_kubectl_proxy(&mut cmd)?;
        let (log, _) = procs::log_file(dir, "fake-gce")?;
        let (fake_gce, gce) = Proc::spawn_listening(
            procs::FAKE_GCE,
            Command::new(bins.path(procs::FAKE_GCE))
                .args([
                    "--listen",
                    "127.0.0.1:0",
                    "--project",
                    PROJECT,
                    "--region",
                    REGION,
                ])
                .args(["--zones", ZONE, "--op-latency-ms", &op_latency_ms.to_string()])
                // The default 203.0.113.0/24 holds 254 addresses; C2 reserves 1000 (RFC 2544's
                // benchmarking block, never routed anywhere).
                .args(["--external-range", "198.18.0.0/15"])
                .stderr(log),
        )?;
        Ok(Cluster {
            controller: None,
            _api_proxy: api_proxy,
            control_plane,
            controller_kubeconfig,
            fake_gce,
            api,
            gce,
            dir: tmp.path().to_path_buf(),
            tmp: Some(tmp),
            bins: bins.clone(),
        })
    }

    /// Starts the controller (service controller only) with `extra` flags; the rest are the
    /// binary's defaults. Returns when the process is spawned.
    pub fn start_controller(&mut self, extra: &[&str]) -> Result<(), BenchError> {
        let (log, _) = procs::log_file(&self.dir, "controller")?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| BenchError::io("free port", e))?
            .port();
        let mut cmd = Command::new(self.bins.path(procs::CONTROLLER));
        cmd.args(["--project", PROJECT, "--region", REGION, "--zones", ZONE])
            .args([
                "--network",
                "default",
                "--cluster-name",
                CLUSTER,
                "--node-tags",
                NODE_TAG,
            ])
            .args(["--gce-endpoint", &format!("http://{}", self.gce)])
            .args(["--controllers", "service"])
            .args(["--metrics-addr", &format!("127.0.0.1:{port}")])
            .arg("--kubeconfig")
            .arg(&self.controller_kubeconfig)
            .args(extra)
            .env("SVCNET_LOG", "info,kube=warn")
            .stdout(Stdio::null())
            .stderr(log);
        self.controller = Some(Proc::spawn(procs::CONTROLLER, &mut cmd)?);
        Ok(())
    }

    pub fn controller_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("controller.log")).unwrap_or_default()
    }

    /// Creates `n` instances in the fake and their Nodes in the API (`node-00000`...).
    pub fn add_nodes(&self, n: usize) -> Result<(), BenchError> {
        for i in 0..n {
            let name = node_name(i);
            request(
                &self.gce,
                "POST",
                "/_fake/instances",
                Some(&json!({"name": name, "zone": ZONE, "tags": [NODE_TAG], "machineType": "e2-medium"})),
            )?
            .ok("add instance")?;
            request(&self.api, "POST", "/api/v1/nodes", Some(&node(&name)))?.ok("create node")?;
        }
        Ok(())
    }

    /// The CloudLoadBalancer CRD, so the controller writes its records as in a real cluster.
    pub fn install_crd(&self) -> Result<(), BenchError> {
        let yaml = include_str!("../../manifests/crds/cloudloadbalancers.svcnet.dev.yaml");
        http::request_typed(
            &self.api,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Some(("application/yaml", yaml.as_bytes())),
        )?
        .ok("create CRD")?;
        Ok(())
    }

    /// Creates the LoadBalancer Services `names` with `parallel` requests in flight.
    pub fn create_services(&self, names: &[String], parallel: usize) -> Result<(), BenchError> {
        let next = AtomicUsize::new(0);
        let err: Mutex<Option<BenchError>> = Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..parallel.max(1) {
                s.spawn(|| {
                    while let Some(name) = names.get(next.fetch_add(1, Ordering::SeqCst)) {
                        let r = request(&self.api, "POST", SERVICES, Some(&lb_service(name)))
                            .and_then(|r| r.ok("create service"));
                        if let Err(e) = r {
                            *err.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.into());
                            return;
                        }
                    }
                });
            }
        });
        match err.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Number of Services in `default` that have an ingress IP.
    pub fn services_with_ingress(&self) -> Result<usize, BenchError> {
        let list = get_json(&self.api, SERVICES)?;
        Ok(list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| ingress_ip(s).is_some())
            .count())
    }

    /// Polls until `want` Services have an ingress IP; returns when that was first seen, or an
    /// error after `limit` (or when the controller exits).
    pub fn wait_all_ingress(
        &mut self,
        want: usize,
        limit: Duration,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Instant, BenchError> {
        let start = Instant::now();
        let mut last_report = Instant::now();
        loop {
            let have = self.services_with_ingress()?;
            if have >= want {
                return Ok(Instant::now());
            }
            if start.elapsed() > limit {
                return Err(BenchError::Check(format!(
                    "{have} of {want} Services have an ingress after {limit:?}"
                )));
            }
            if let Some(c) = self.controller.as_mut()
                && !c.alive()
            {
                return Err(BenchError::Check(format!(
                    "controller exited; log tail:\n{}",
                    tail(&self.controller_log(), 20)
                )));
            }
            if last_report.elapsed() > Duration::from_secs(30) {
                progress(&format!(
                    "  {have}/{want} Services have an ingress after {:.0} s",
                    start.elapsed().as_secs_f64()
                ));
                last_report = Instant::now();
            }
            // Listing 1000 Services every 200 ms would load the API server the controller talks to;
            // poll large runs once a second (the figures are minutes).
            std::thread::sleep(Duration::from_millis(if want > 100 { 1000 } else { 200 }));
        }
    }

    /// The fake's call log (`GET /_fake/calls`).
    pub fn calls(&self) -> Result<Value, BenchError> {
        Ok(get_json(&self.gce, "/_fake/calls")?)
    }

    pub fn clear_calls(&self) -> Result<(), BenchError> {
        request(&self.gce, "DELETE", "/_fake/calls", None)?.ok("clear calls")?;
        Ok(())
    }

    /// The fake's whole state (`GET /_fake/state`).
    pub fn gce_state(&self) -> Result<Value, BenchError> {
        Ok(get_json(&self.gce, "/_fake/state")?)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // SVCNET_BENCH_KEEP=1 keeps the logs (and kubeconfig) for a post-mortem.
        if std::env::var_os("SVCNET_BENCH_KEEP").is_some() {
            self.controller = None;
            if let Some(dir) = self.tmp.take() {
                eprintln!("kept {}", dir.keep().display());
            }
        }
    }
}

pub const SERVICES: &str = "/api/v1/namespaces/default/services";

pub fn node_name(i: usize) -> String {
    format!("node-{i:05}")
}

/// A Node as kubelet and the node controller leave it: providerID and Ready.
pub fn node(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"providerID": format!("gce://{PROJECT}/{ZONE}/{name}")},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    })
}

pub fn lb_service(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}
    })
}

pub fn ingress_ip(svc: &Value) -> Option<&str> {
    svc["status"]["loadBalancer"]["ingress"][0]["ip"].as_str()
}

pub fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Watches the Service `name` and records the wall-clock time (ms since the epoch) at which an
/// event carrying an ingress IP first arrived. Runs on its own thread until then or `limit`.
pub fn watch_ingress(api: &str, name: &str, limit: Duration) -> Arc<Mutex<Option<(u64, String)>>> {
    let seen = Arc::new(Mutex::new(None));
    let out = Arc::clone(&seen);
    let path = format!("{SERVICES}?watch=true&fieldSelector=metadata.name%3D{name}");
    let api = api.to_owned();
    std::thread::spawn(move || {
        let _ = http::watch(&api, &path, limit, |ev| {
            let Some(ip) = ingress_ip(&ev["object"]) else {
                return true;
            };
            *out.lock().unwrap_or_else(|p| p.into_inner()) = Some((now_ms(), ip.to_owned()));
            false
        });
    });
    seen
}

/// Milliseconds since the Unix epoch (the fake's call log uses the same clock).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
