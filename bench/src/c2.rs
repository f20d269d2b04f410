//! C2: many LoadBalancer Services at once. The Services and nodes are created first, then the
//! controller is started; the figure is the time from its start until every Service has an
//! ingress IP. Measured twice with the same binary: default flags on `services`, and
//! `--concurrency 1` on `serial_services` (it is serial, so the time per Service is constant and
//! the full-size time is extrapolated; the output says so).

use std::time::{Duration, Instant};

use crate::cluster::Cluster;
use crate::error::BenchError;
use crate::gcecalls::{self, Counts};
use crate::procs::Bins;

pub struct C2Params {
    pub services: usize,
    pub serial_services: usize,
    pub nodes: usize,
    pub op_latency_ms: u64,
    /// Extra controller flags of the "default" run (empty = the binary's defaults).
    pub default_args: Vec<String>,
    pub limit: Duration,
}

#[derive(Debug, Clone)]
pub struct C2Run {
    pub label: String,
    pub services: usize,
    /// Controller started -> every Service has its ingress.
    pub elapsed: Duration,
    /// Calls in the fake's log (it keeps the last 100 000).
    pub calls: Counts,
    pub log_truncated: bool,
}

#[derive(Debug)]
pub struct C2 {
    pub nodes: usize,
    pub op_latency_ms: u64,
    pub default: C2Run,
    pub serial: C2Run,
}

impl C2 {
    /// Seconds per Service at concurrency 1.
    pub fn serial_per_service(&self) -> f64 {
        per_service(&self.serial)
    }

    /// Extrapolated concurrency-1 time for the default run's Service count.
    pub fn serial_extrapolated(&self) -> f64 {
        extrapolate(&self.serial, self.default.services)
    }

    /// How many times faster the default is than concurrency 1 (same Service count).
    pub fn speedup(&self) -> f64 {
        speedup(&self.serial, &self.default)
    }
}

pub fn per_service(r: &C2Run) -> f64 {
    if r.services == 0 {
        return f64::NAN;
    }
    r.elapsed.as_secs_f64() / r.services as f64
}

/// Time of `r` scaled linearly to `services` (valid for a serial run: constant time per Service).
pub fn extrapolate(r: &C2Run, services: usize) -> f64 {
    per_service(r) * services as f64
}

/// Extrapolated serial time over the measured parallel time.
pub fn speedup(serial: &C2Run, parallel: &C2Run) -> f64 {
    crate::stats::ratio(
        extrapolate(serial, parallel.services),
        parallel.elapsed.as_secs_f64(),
    )
}

fn one_run(
    bins: &Bins,
    p: &C2Params,
    label: &str,
    services: usize,
    args: &[String],
    progress: &mut dyn FnMut(&str),
) -> Result<C2Run, BenchError> {
    progress(&format!(
        "C2 {label}: {services} LoadBalancer Services x {} nodes, {} ms operations, controller flags {args:?}",
        p.nodes, p.op_latency_ms
    ));
    let mut c = Cluster::start(bins, p.op_latency_ms)?;
    c.install_crd()?;
    c.add_nodes(p.nodes)?;
    let names: Vec<String> = (0..services).map(|i| format!("c2-{i:05}")).collect();
    c.create_services(&names, 16)?;
    let extra: Vec<&str> = args.iter().map(String::as_str).collect();
    c.start_controller(&extra)?;
    let t0 = Instant::now();
    let done = c.wait_all_ingress(services, p.limit, progress)?;
    let elapsed = done.duration_since(t0);
    progress(&format!("C2 {label}: {:.1} s", elapsed.as_secs_f64()));
    // Let the controller finish the read-only resync its own status writes trigger, then stop it,
    // so the log is complete for the LBs.
    std::thread::sleep(Duration::from_secs(2));
    c.controller = None;
    let calls = gcecalls::parse_calls(&c.calls()?);
    Ok(C2Run {
        label: label.to_owned(),
        services,
        elapsed,
        log_truncated: calls.len() >= 100_000,
        calls: gcecalls::count(&calls),
    })
}

pub fn run(bins: &Bins, p: &C2Params, progress: &mut dyn FnMut(&str)) -> Result<C2, BenchError> {
    let serial = one_run(
        bins,
        p,
        "concurrency 1",
        p.serial_services,
        &["--concurrency".into(), "1".into()],
        progress,
    )?;
    // Named after its flags when they are not the binary's defaults, so the table cannot mislead.
    let label = if p.default_args.is_empty() {
        "default".to_owned()
    } else {
        p.default_args.join(" ")
    };
    let default = one_run(bins, p, &label, p.services, &p.default_args, progress)?;
    Ok(C2 {
        nodes: p.nodes,
        op_latency_ms: p.op_latency_ms,
        default,
        serial,
    })
}

#[cfg(test)]
mod tests;
