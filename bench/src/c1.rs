//! C1: one new LoadBalancer Service with N nodes through the real controller, the real
//! kube-apiserver and the fake GCE: the GCE calls it takes, the mutating calls of a no-op resync, and the time from the
//! last GCE operation DONE (the fake's operation `endTime`) to the ingress IP arriving on a watch
//! of the Service.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::cluster::{self, Cluster, SERVICES};
use crate::error::BenchError;
use crate::gcecalls::{self, Counts};
use crate::http::{get_json, request};
use crate::procs::Bins;

pub struct C1Params {
    pub nodes: usize,
    pub op_latency_ms: u64,
    /// How long to wait for the ingress before giving up.
    pub limit: Duration,
}

#[derive(Debug)]
pub struct C1 {
    pub nodes: usize,
    pub op_latency_ms: u64,
    /// Calls from the Service's creation until its ingress was written.
    pub new_lb: Counts,
    pub new_lb_mutating: Vec<String>,
    /// Calls of a resync triggered by an LB-irrelevant change of the Service.
    pub noop: Counts,
    pub noop_mutating: Vec<String>,
    /// Service created -> ingress seen on the watch.
    pub create_to_ingress: Duration,
    /// Last operation DONE (fake clock) -> ingress seen on the watch (same machine clock).
    pub done_to_ingress_ms: Option<i64>,
}

/// Waits until the controller has started (it writes the cluster ID ConfigMap first).
pub fn wait_controller_ready(c: &mut Cluster, limit: Duration) -> Result<(), BenchError> {
    let start = Instant::now();
    loop {
        let r = request(
            &c.api,
            "GET",
            "/api/v1/namespaces/kube-system/configmaps/ingress-uid",
            None,
        )?;
        if r.status == 200 {
            // The node reflector lists right after; give it a moment.
            std::thread::sleep(Duration::from_millis(500));
            return Ok(());
        }
        if start.elapsed() > limit || c.controller.as_mut().is_some_and(|p| !p.alive()) {
            return Err(BenchError::Check(format!(
                "controller not ready; log tail:\n{}",
                cluster::tail(&c.controller_log(), 20)
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until the fake saw at least `min` calls and then none for `quiet`.
fn wait_calls_settle(c: &Cluster, min: usize, quiet: Duration, limit: Duration) -> Result<(), BenchError> {
    let start = Instant::now();
    let mut last = (usize::MAX, Instant::now());
    loop {
        let n = gcecalls::parse_calls(&c.calls()?).len();
        if n != last.0 {
            last = (n, Instant::now());
        } else if n >= min && last.1.elapsed() >= quiet {
            return Ok(());
        }
        if start.elapsed() > limit {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn run(bins: &Bins, p: &C1Params, progress: &mut dyn FnMut(&str)) -> Result<C1, BenchError> {
    progress(&format!(
        "C1: 1 LoadBalancer Service, {} nodes, {} ms operations",
        p.nodes, p.op_latency_ms
    ));
    let mut c = Cluster::start(bins, p.op_latency_ms)?;
    c.install_crd()?;
    c.add_nodes(p.nodes)?;
    c.start_controller(&[])?;
    wait_controller_ready(&mut c, Duration::from_secs(60))?;

    let name = "c1-web";
    c.clear_calls()?;
    let since = cluster::now_ms();
    let seen = cluster::watch_ingress(&c.api, name, p.limit);
    std::thread::sleep(Duration::from_millis(200)); // the watch is open before the create
    let t0 = Instant::now();
    request(&c.api, "POST", SERVICES, Some(&cluster::lb_service(name)))?.ok("create service")?;
    let ingress_ms = loop {
        if let Some((ms, _)) = seen.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            break ms;
        }
        if t0.elapsed() > p.limit {
            return Err(BenchError::Check(format!(
                "C1: no ingress within {:?}; controller log tail:\n{}",
                p.limit,
                cluster::tail(&c.controller_log(), 20)
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let create_to_ingress = t0.elapsed();
    let state = c.gce_state()?;
    let done = gcecalls::last_operation_done_ms(&state, since);
    // Calls up to the ingress write belong to the creation; the controller's own status write
    // triggers one more (read-only) reconcile right after, which is not counted here.
    let calls: Vec<_> = gcecalls::parse_calls(&c.calls()?)
        .into_iter()
        .filter(|x| x.time_ms <= ingress_ms)
        .collect();
    let new_lb = gcecalls::count(&calls);
    let new_lb_mutating = gcecalls::mutating_labels(&calls);

    // No-op resync: an annotation change the LB does not depend on.
    wait_calls_settle(&c, 0, Duration::from_millis(1500), Duration::from_secs(30))?;
    c.clear_calls()?;
    let touch = json!({"metadata": {"annotations": {"svcnet-bench/touched": "yes"}}});
    crate::http::request_typed(
        &c.api,
        "PATCH",
        &format!("{SERVICES}/{name}"),
        Some(("application/merge-patch+json", touch.to_string().as_bytes())),
    )?
    .ok("touch service")?;
    wait_calls_settle(&c, 1, Duration::from_millis(1500), Duration::from_secs(30))?;
    let calls = gcecalls::parse_calls(&c.calls()?);
    let noop = gcecalls::count(&calls);
    let noop_mutating = gcecalls::mutating_labels(&calls);
    // The Service still has its ingress (sanity: the resync did not clear it).
    let svc = get_json(&c.api, &format!("{SERVICES}/{name}"))?;
    if cluster::ingress_ip(&svc).is_none() {
        return Err(BenchError::Check(
            "C1: ingress lost after the no-op resync".into(),
        ));
    }
    Ok(C1 {
        nodes: p.nodes,
        op_latency_ms: p.op_latency_ms,
        new_lb,
        new_lb_mutating,
        noop,
        noop_mutating,
        create_to_ingress,
        done_to_ingress_ms: done
            .map(|d| i64::try_from(ingress_ms).unwrap_or(0) - i64::try_from(d).unwrap_or(0)),
    })
}
