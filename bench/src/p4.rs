//! P4: resident memory of the real `svcnet-proxy run` holding S Services / E endpoints fed through
//! the real kube-apiserver.
//!
//! Everything runs inside one throwaway namespace (see [`crate::netns`]): etcd and kube-apiserver
//! (svcnet-testcluster) on the namespace's loopback, the loader (`svcnet-bench load-api`, parallel
//! POSTs through `kubectl proxy`), then the proxy under its ServiceAccount's RBAC, whose
//! iptables writes land in that namespace only. The bench samples `/proc/<pid>/status` (VmRSS,
//! VmHWM) of the proxy until its log says `synced` (first full sync done), it logs a failed sync,
//! or the limit passes; the figure is reported with which of those happened.

use std::fs::File;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::error::BenchError;
use crate::http::request;
use crate::netns::{self, Netns};
use crate::procs::{self, Bins, Proc, spawn_kubectl_proxy};
use svcnet_testcluster::{Cluster, Component, Options};

pub const NODE: &str = "bench-node";

/// `SERVICESxENDPOINTS` (e.g. `10000x10`), the size flags of P4 and U.
pub fn parse_size(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .split_once('x')
        .ok_or("expected SERVICESxENDPOINTS, e.g. 10000x10")?;
    Ok((
        a.trim().parse().map_err(|e| format!("{e}"))?,
        b.trim().parse().map_err(|e| format!("{e}"))?,
    ))
}

pub struct P4Params {
    /// (services, endpoints per service) cases, smallest first.
    pub sizes: Vec<(usize, usize)>,
    /// Give up waiting for the first full sync after this long.
    pub limit: Duration,
    /// Extra `svcnet-proxy run` flags.
    pub proxy_args: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mem {
    pub rss_kb: u64,
    pub hwm_kb: u64,
}

/// VmRSS and VmHWM from the text of `/proc/<pid>/status`.
pub fn parse_status(text: &str) -> Option<Mem> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    Some(Mem {
        rss_kb: field("VmRSS:")?,
        hwm_kb: field("VmHWM:")?,
    })
}

pub fn read_mem(pid: u32) -> Option<Mem> {
    parse_status(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// How the wait for the first full sync ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncState {
    Synced,
    /// The proxy logged a failed sync (it keeps running and retries).
    Failed(String),
    /// Still waiting when the limit passed.
    TimedOut,
    Exited,
}

/// Whether the proxy logged `list complete` for all three watched kinds.
pub fn lists_complete(log: &str) -> bool {
    log.lines().filter(|l| l.contains("list complete")).count() >= 3
}

/// What the proxy log says about the first sync.
pub fn sync_state(log: &str) -> Option<SyncState> {
    for l in log.lines() {
        if l.contains("sync failed") {
            return Some(SyncState::Failed(l.chars().take(300).collect()));
        }
        if l.contains("synced") && !l.contains("cache") {
            return Some(SyncState::Synced);
        }
    }
    None
}

#[derive(Debug, Clone)]
pub struct P4Case {
    pub services: usize,
    pub endpoints: usize,
    pub load: Duration,
    /// Proxy start -> first sync (or the end of the wait).
    pub to_sync: Duration,
    pub state: SyncState,
    /// First sample after the proxy logged `list complete` for Services, EndpointSlices and the
    /// Node (its caches loaded, the first render about to start).
    pub caches: Option<Mem>,
    /// When the wait ended.
    pub at_end: Mem,
    /// Largest VmRSS sampled before the first sync ended (or before the wait ended).
    pub peak_rss_kb: u64,
    pub apiserver_rss_kb: u64,
}

/// The message of a tracing log line (after the target), without colour codes, cut short.
pub fn log_message(line: &str) -> String {
    let mut plain = String::new();
    let mut esc = false;
    for ch in line.chars() {
        match (esc, ch) {
            (false, '\u{1b}') => esc = true,
            (true, 'm') => esc = false,
            (true, _) => {}
            (false, c) => plain.push(c),
        }
    }
    let msg = plain.split_once(": ").map_or(plain.as_str(), |(_, m)| m);
    msg.chars().take(100).collect()
}

pub fn endpoint_ip(i: usize) -> Ipv4Addr {
    // 10.128.0.0/9: room for 8M endpoints.
    let base = u32::from(Ipv4Addr::new(10, 128, 0, 0));
    Ipv4Addr::from(base.wrapping_add(u32::try_from(i + 1).unwrap_or(0)))
}

pub fn service(i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("svc-{i:05}"), "namespace": "default"},
        "spec": {"selector": {"app": format!("svc-{i:05}")},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}
    })
}

pub fn slice(i: usize, endpoints: usize) -> Value {
    let eps: Vec<Value> = (0..endpoints)
        .map(|j| {
            json!({"addresses": [endpoint_ip(i * endpoints + j).to_string()],
                   "conditions": {"ready": true, "serving": true, "terminating": false},
                   "nodeName": format!("other-{}", j % 100)})
        })
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("svc-{i:05}-bench"), "namespace": "default",
                     "labels": {"kubernetes.io/service-name": format!("svc-{i:05}"),
                                "endpointslice.kubernetes.io/managed-by": "svcnet-bench"}},
        "addressType": "IPv4",
        "endpoints": eps,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
    })
}

pub fn node() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]},
        "status": {"addresses": [{"type": "InternalIP", "address": netns::ENDPOINT_ADDR}],
                   "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

/// The loader (`svcnet-bench load-api`, run inside the namespace): the Node, then every Service
/// and its EndpointSlice with `parallel` requests in flight.
pub fn load(api: &str, services: usize, endpoints: usize, parallel: usize) -> Result<Duration, BenchError> {
    let t0 = Instant::now();
    request(api, "POST", "/api/v1/nodes", Some(&node()))?.ok("create node")?;
    let next = AtomicUsize::new(0);
    let err: Mutex<Option<BenchError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..parallel.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= services {
                        return;
                    }
                    let r = request(
                        api,
                        "POST",
                        "/api/v1/namespaces/default/services",
                        Some(&service(i)),
                    )
                    .and_then(|r| r.ok("create service"))
                    .and_then(|_| {
                        request(
                            api,
                            "POST",
                            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
                            Some(&slice(i, endpoints)),
                        )
                    })
                    .and_then(|r| r.ok("create endpointslice"));
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
        None => Ok(t0.elapsed()),
    }
}

fn one_case(
    bins: &Bins,
    p: &P4Params,
    services: usize,
    endpoints: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<P4Case, BenchError> {
    progress(&format!("P4: {services} services x {endpoints} endpoints"));
    let dir = tempfile::Builder::new()
        .prefix("svcnet-bench-p4-")
        .tempdir()
        .map_err(|e| BenchError::io("tempdir", e))?;
    let ns = Netns::create_lab("p4")?;
    let (cluster, kubeconfig) = control_plane(&ns)?;
    // The loader speaks plain HTTP; `kubectl proxy` (as admin, inside the namespace) adds TLS and
    // credentials in front of the API server.
    let mut cmd = cluster
        .admin_kubectl()
        .command(&["proxy", "--address=127.0.0.1", "--port=0"]);
    let (api_proxy, api) = spawn_kubectl_proxy(&mut cmd)?;
    // The loader is this binary, inside the namespace (the API listens on the namespace's lo).
    let load = procs::load_api(&ns, &api, services, endpoints)?;
    progress(&format!("  loaded in {:.1} s", load.as_secs_f64()));

    let (log, log_path) = procs::log_file(dir.path(), "proxy")?;
    let mut cmd = proxy_command(bins, p, &ns, &kubeconfig, log);
    let t0 = Instant::now();
    let mut proxy = Proc::spawn(procs::PROXY, &mut cmd)?;
    let seen = sample_to_first_sync(&mut proxy, &log_path, t0, p.limit, progress);
    if seen.state == SyncState::Exited {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        progress(&format!(
            "  proxy exited; log tail:\n{}",
            crate::cluster::tail(&text, 15)
        ));
    }
    let apiserver_rss_kb = read_mem(cluster.apiserver_pid()).map_or(0, |m| m.rss_kb);
    drop(proxy);
    drop(api_proxy);
    drop(cluster);
    drop(ns);
    if std::env::var_os("SVCNET_BENCH_KEEP").is_some() {
        progress(&format!("  kept {}", dir.keep().display()));
    }
    Ok(P4Case {
        services,
        endpoints,
        load,
        to_sync: seen.to_sync,
        state: seen.state,
        caches: seen.caches,
        at_end: seen.last,
        peak_rss_kb: seen.peak,
        apiserver_rss_kb,
    })
}

/// The real control plane on the namespace's loopback, without controllers: the loader writes the
/// EndpointSlices itself (an endpointslice controller would find no Pods and fight it). Returns it with
/// the proxy's kubeconfig: the proxy runs as its ServiceAccount under the manifests' RBAC, as in a cluster.
fn control_plane(ns: &Netns) -> Result<(Cluster, PathBuf), BenchError> {
    let cluster = Cluster::start_with(Options {
        netns: Some(ns.name.clone()),
        service_cidr: netns::SERVICE_CIDR.into(),
        controller_manager: false,
        ..Options::default()
    })
    .map_err(|e| BenchError::Check(format!("control plane: {e}")))?;
    let kubeconfig = cluster
        .component_kubeconfig(Component::Proxy)
        .map_err(|e| BenchError::Check(format!("svcnet-proxy kubeconfig: {e}")))?;
    Ok((cluster, kubeconfig))
}

/// `svcnet-proxy run` inside the namespace, logging to `log`.
fn proxy_command(bins: &Bins, p: &P4Params, ns: &Netns, kubeconfig: &Path, log: File) -> Command {
    let proxy_bin = bins.path(procs::PROXY);
    let mut cmd = ns.command(&proxy_bin.to_string_lossy());
    cmd.arg("run")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--hostname-override", NODE, "--cluster-cidr", "10.128.0.0/9"])
        .args(&p.proxy_args)
        // The watch's debug line `list complete` (per kind) marks the caches loaded.
        .env("SVCNET_LOG", "info,svcnet_proxy::watch=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    cmd
}

/// What the samples of the proxy's memory showed when the wait for its first sync ended.
struct Seen {
    state: SyncState,
    /// Proxy start -> first sync (or the end of the wait).
    to_sync: Duration,
    caches: Option<Mem>,
    last: Mem,
    peak: u64,
}

/// Samples the proxy's memory (started at `t0`) until its log tells the first sync ended, it exits or
/// `limit` passes; reports the curve every 5 s.
fn sample_to_first_sync(
    proxy: &mut Proc,
    log_path: &Path,
    t0: Instant,
    limit: Duration,
    progress: &mut dyn FnMut(&str),
) -> Seen {
    // `ip netns exec` execs the program: the child's pid is the proxy's.
    let pid = proxy.pid();
    let mut peak = 0;
    let mut last = Mem::default();
    let mut reported = Instant::now();
    let mut caches: Option<Mem> = None;
    let state = loop {
        if let Some(m) = read_mem(pid) {
            peak = peak.max(m.rss_kb);
            last = m;
        }
        let text = std::fs::read_to_string(log_path).unwrap_or_default();
        if caches.is_none() && lists_complete(&text) {
            caches = Some(last);
        }
        if reported.elapsed() >= Duration::from_secs(5) {
            // The memory curve against what the proxy is doing (its last log line), to tell the
            // caches from the render and the restore.
            let doing = text.lines().last().map(log_message).unwrap_or_default();
            progress(&format!(
                "  {:>5.1} s  VmRSS {:>7.1} MiB  {doing}",
                t0.elapsed().as_secs_f64(),
                last.rss_kb as f64 / 1024.0
            ));
            reported = Instant::now();
        }
        if let Some(s) = sync_state(&text) {
            break s;
        }
        if !proxy.alive() {
            break SyncState::Exited;
        }
        if t0.elapsed() > limit {
            break SyncState::TimedOut;
        }
        // Fine-grained until the caches are loaded (the first render starts right after).
        std::thread::sleep(Duration::from_millis(if caches.is_none() { 50 } else { 250 }));
    };
    let to_sync = t0.elapsed();
    if let Some(m) = read_mem(pid) {
        peak = peak.max(m.rss_kb);
        last = m;
    }
    Seen {
        state,
        to_sync,
        caches,
        last,
        peak,
    }
}

pub fn run(bins: &Bins, p: &P4Params, progress: &mut dyn FnMut(&str)) -> Result<Vec<P4Case>, BenchError> {
    p.sizes
        .iter()
        .map(|&(s, e)| one_case(bins, p, s, e, progress))
        .collect()
}

#[cfg(test)]
mod tests;
