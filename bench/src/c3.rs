//! C3: failover at scale. N LoadBalancer Services are built and converged first (with fast
//! operations and no client-side rate limit, to set the stage quickly); then the controller is
//! killed, operations are slowed to the measured latency, a controller with default flags starts
//! as a new leader would, and one new Service is created as soon as it leads. The figure is the
//! time from then until the new Service has its ingress IP: the converged LBs must not stand in
//! front of it (the controller re-verifies them behind new work, within the read quota). The wait
//! for the dead leader's lease is reported apart.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::cluster::{Cluster, SERVICES, ingress_ip};
use crate::error::BenchError;
use crate::gcecalls::{self, Counts};
use crate::http::{get_json, request};
use crate::procs::Bins;

pub struct C3Params {
    pub converged: usize,
    pub nodes: usize,
    pub op_latency_ms: u64,
    pub limit: Duration,
}

#[derive(Debug)]
pub struct C3 {
    pub converged: usize,
    pub nodes: usize,
    pub op_latency_ms: u64,
    /// Building the converged LBs (setup, fast operations).
    pub setup: Duration,
    /// Restarted process started -> it holds the lease (the dead leader's lease expiring).
    pub lease_wait: Duration,
    /// The restarted controller became leader (and the new Service was created) -> the new
    /// Service has its IP.
    pub new_ip: Duration,
    /// GCE calls from the restart until the new IP.
    pub calls: Counts,
}

const NEW: &str = "c3-new";

pub fn run(bins: &Bins, p: &C3Params, progress: &mut dyn FnMut(&str)) -> Result<C3, BenchError> {
    progress(&format!(
        "C3: {} converged LoadBalancers x {} nodes, then a restart with {} ms operations and one new Service",
        p.converged, p.nodes, p.op_latency_ms
    ));
    let mut c = Cluster::start(bins, 0)?;
    c.install_crd()?;
    c.add_nodes(p.nodes)?;
    let names: Vec<String> = (0..p.converged).map(|i| format!("c3-{i:05}")).collect();
    c.create_services(&names, 16)?;
    let t_setup = Instant::now();
    c.start_controller(&["--gce-qps", "0", "--concurrency", "64"])?;
    c.wait_all_ingress(p.converged, p.limit, progress)?;
    let setup = t_setup.elapsed();
    progress(&format!(
        "C3: {} LBs converged in {:.1} s",
        p.converged,
        setup.as_secs_f64()
    ));
    // Let the last syncs end (status writes, records) before the "leader" dies.
    std::thread::sleep(Duration::from_secs(2));
    c.controller = None;
    request(
        &c.gce,
        "POST",
        "/_fake/op-latency",
        Some(&json!({"ms": p.op_latency_ms})),
    )?
    .ok("set op latency")?;
    c.clear_calls()?;

    c.start_controller(&[])?;
    // The new process first waits for the dead leader's lease to expire (15 s by default, as
    // kube-controller-manager's): reported apart, the figure starts when it leads.
    let t_start = Instant::now();
    while !c.controller_log().contains("became leader") {
        if t_start.elapsed() > p.limit {
            return Err(BenchError::Check(
                "the restarted controller never became leader".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let lease_wait = t_start.elapsed();
    let t0 = Instant::now();
    c.create_services(&[NEW.to_owned()], 1)?;
    let path = format!("{SERVICES}/{NEW}");
    let new_ip = loop {
        let svc = get_json(&c.api, &path)?;
        if ingress_ip(&svc).is_some() {
            break t0.elapsed();
        }
        if t0.elapsed() > p.limit {
            return Err(BenchError::Check(format!(
                "{NEW} has no ingress IP after {:?}",
                p.limit
            )));
        }
        if let Some(ctl) = c.controller.as_mut()
            && !ctl.alive()
        {
            return Err(BenchError::Check("controller exited during C3".into()));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    progress(&format!(
        "C3: new Service's IP {:.1} s after the restart",
        new_ip.as_secs_f64()
    ));
    let calls = gcecalls::count(&gcecalls::parse_calls(&c.calls()?));
    Ok(C3 {
        converged: p.converged,
        nodes: p.nodes,
        op_latency_ms: p.op_latency_ms,
        setup,
        lease_wait,
        new_ip,
        calls,
    })
}
