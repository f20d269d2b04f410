//! The printed tables of C1, C2, C3 (cloud controller) and P4 (proxy memory), each with its target
//! and what it means for a user.

use std::fmt::Write as _;

use crate::c1::C1;
use crate::c2::{C2, C2Run};
use crate::c3::C3;
use crate::gcecalls::Counts;
use crate::p4::{P4Case, SyncState};

pub const C1_NEW_LB_MUTATING_TARGET: usize = 8;
pub const C1_DONE_TO_INGRESS_MS_TARGET: i64 = 1000;
pub const C2_SPEEDUP_TARGET: f64 = 20.0;
pub const C3_NEW_IP_S_TARGET: f64 = 10.0;
pub const P4_RSS_KB_TARGET: u64 = 64 * 1024;

fn verdict(ok: bool) -> &'static str {
    if ok { "MET" } else { "MISSED" }
}

fn counts_row(what: &str, c: &Counts) -> String {
    format!(
        "    {what:<22} {:>6} {:>9} {:>6} {:>6} {:>6} {:>7}\n",
        c.total, c.mutating, c.gets, c.lists, c.polls, c.errors
    )
}

pub fn c1(r: &C1) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nC1  one new LoadBalancer Service, {} nodes, fake GCE operations take {} ms (svcnet-cloud-controller defaults)",
        r.nodes, r.op_latency_ms
    );
    let _ = writeln!(
        s,
        "    {:<22} {:>6} {:>9} {:>6} {:>6} {:>6} {:>7}",
        "GCE calls", "total", "mutating", "gets", "lists", "polls", "errors"
    );
    s.push_str(&counts_row("new LB", &r.new_lb));
    s.push_str(&counts_row("no-op resync", &r.noop));
    let _ = writeln!(s, "    new LB mutating calls: {}", r.new_lb_mutating.join(", "));
    if !r.noop_mutating.is_empty() {
        let _ = writeln!(
            s,
            "    no-op resync mutating calls: {}",
            r.noop_mutating.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "    new LB: {} mutating calls (target <= {C1_NEW_LB_MUTATING_TARGET}) {}",
        r.new_lb.mutating,
        verdict(r.new_lb.mutating <= C1_NEW_LB_MUTATING_TARGET)
    );
    let _ = writeln!(
        s,
        "    no-op resync: {} mutating calls (target 0) {}",
        r.noop.mutating,
        verdict(r.noop.mutating == 0)
    );
    match r.done_to_ingress_ms {
        Some(ms) => {
            let _ = writeln!(
                s,
                "    last operation DONE -> ingress on a watch: {ms} ms (target <= {C1_DONE_TO_INGRESS_MS_TARGET} ms) {}",
                verdict(ms <= C1_DONE_TO_INGRESS_MS_TARGET)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "    last operation DONE -> ingress: no DONE operation found (UNKNOWN)"
            );
        }
    }
    let _ = writeln!(
        s,
        "    Service created -> ingress: {:.2} s",
        r.create_to_ingress.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "    means: how many GCE writes (quota) one LoadBalancer costs, that an idle resync costs none, and how long a\n    user waits for EXTERNAL-IP after GCE has finished (polling + final check + status write)."
    );
    s
}

fn c2_row(r: &C2Run) -> String {
    format!(
        "    {:<15} {:>8} {:>10.1} {:>12.2} {:>8}{} {:>9}\n",
        r.label,
        r.services,
        r.elapsed.as_secs_f64(),
        crate::c2::per_service(r),
        r.calls.total,
        if r.log_truncated { "+" } else { " " },
        r.calls.mutating,
    )
}

pub fn c2(r: &C2) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nC2  many LoadBalancer Services x {} nodes, fake GCE operations take {} ms: controller start -> every ingress written",
        r.nodes, r.op_latency_ms
    );
    let _ = writeln!(
        s,
        "    {:<15} {:>8} {:>10} {:>12} {:>9} {:>9}",
        "controller", "services", "seconds", "s / service", "calls", "mutating"
    );
    s.push_str(&c2_row(&r.default));
    s.push_str(&c2_row(&r.serial));
    let speedup = r.speedup();
    let _ = writeln!(
        s,
        "    concurrency 1 was measured on {} Services and is serial: {:.2} s per Service, extrapolated x {} = {:.0} s ({:.1} min)",
        r.serial.services,
        r.serial_per_service(),
        r.default.services,
        r.serial_extrapolated(),
        r.serial_extrapolated() / 60.0
    );
    let _ = writeln!(
        s,
        "    {} vs concurrency 1 at {} Services: {:.1}x faster (target >= {C2_SPEEDUP_TARGET}x) {}",
        r.default.label,
        r.default.services,
        speedup,
        if speedup.is_nan() {
            "UNKNOWN"
        } else {
            verdict(speedup >= C2_SPEEDUP_TARGET)
        }
    );
    if r.default.log_truncated || r.serial.log_truncated {
        let _ = writeln!(
            s,
            "    (+: the fake keeps the last 100000 calls; earlier ones are not counted)"
        );
    }
    let _ = writeln!(
        s,
        "    means: how long a cluster waits for all its EXTERNAL-IPs after a controller (re)start or a mass creation."
    );
    s
}

pub fn c3(r: &C3) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nC3  restart with {} converged LoadBalancers x {} nodes, fake GCE operations take {} ms: new leader -> a new Service's IP",
        r.converged, r.nodes, r.op_latency_ms
    );
    let _ = writeln!(
        s,
        "    {:<22} {:>6} {:>9} {:>6} {:>6} {:>6} {:>7}",
        "GCE calls", "total", "mutating", "gets", "lists", "polls", "errors"
    );
    s.push_str(&counts_row("restart -> new IP", &r.calls));
    let secs = r.new_ip.as_secs_f64();
    let _ = writeln!(
        s,
        "    new Service's IP {secs:.1} s after the restarted controller became leader (target < {C3_NEW_IP_S_TARGET} s) {}",
        verdict(secs < C3_NEW_IP_S_TARGET)
    );
    let _ = writeln!(
        s,
        "    before that: {:.1} s waiting for the killed leader's lease to expire (--leader-elect-lease-duration-seconds)",
        r.lease_wait.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "    setup: {} LBs built in {:.1} s with 0 ms operations and no client-side rate limit",
        r.converged,
        r.setup.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "    means: how long a new Service waits for its EXTERNAL-IP right after a leader change in a large cluster."
    );
    s
}

pub fn p4(cases: &[P4Case]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nP4  svcnet-proxy memory, objects fed through the real kube-apiserver, proxy as its ServiceAccount in a throwaway namespace"
    );
    let _ = writeln!(
        s,
        "    {:>8} {:>9} {:>8} {:>10} {:>11} {:>12} {:>9} {:>9} {:>9}  first sync",
        "services",
        "endpoints",
        "load s",
        "proxy s",
        "caches MiB",
        "VmRSS MiB",
        "peak MiB",
        "VmHWM MiB",
        "api MiB"
    );
    for c in cases {
        p4_row(&mut s, c);
    }
    if let [small, .., big] = cases {
        let (ds, de) = (
            big.services.saturating_sub(small.services),
            (big.services * big.endpoints).saturating_sub(small.services * small.endpoints),
        );
        if ds > 0 {
            let dkb = big.at_end.hwm_kb.saturating_sub(small.at_end.hwm_kb) as f64;
            let _ = writeln!(
                s,
                "    growth (VmHWM): {:.0} KiB per 1000 services with their {} endpoints ({:.0} bytes per endpoint if endpoints dominate)",
                dkb / ds as f64 * 1000.0,
                de / ds * 1000,
                dkb * 1024.0 / de.max(1) as f64
            );
        }
    }
    if let Some(big) = cases.last() {
        let done = big.state == SyncState::Synced;
        let _ = writeln!(
            s,
            "    {} services / {} endpoints: VmHWM {:.1} MiB (target <= 64 MiB) {}{}",
            big.services,
            big.services * big.endpoints,
            mib(big.at_end.hwm_kb),
            verdict(big.at_end.hwm_kb <= P4_RSS_KB_TARGET),
            if done {
                ""
            } else {
                " -- first full sync NOT complete: figure taken with the caches loaded, before a finished sync"
            }
        );
    }
    let _ = writeln!(
        s,
        "    (caches: VmRSS at the first sample after the proxy listed Services, EndpointSlices and the Node)\n    means: the memory each node's proxy needs for a cluster of this size (VmHWM: the peak the kernel saw)."
    );
    s
}

fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

/// One P4 size: times, memory figures and how the wait for the first sync ended.
fn p4_row(s: &mut String, c: &P4Case) {
    let state = match &c.state {
        SyncState::Synced => "done".to_owned(),
        SyncState::Failed(l) => format!("FAILED: {l}"),
        SyncState::TimedOut => "not finished (limit)".to_owned(),
        SyncState::Exited => "proxy exited".to_owned(),
    };
    let caches = c
        .caches
        .map_or_else(|| "n/a".to_owned(), |m| format!("{:.1}", mib(m.rss_kb)));
    let _ = writeln!(
        s,
        "    {:>8} {:>9} {:>8.1} {:>10.1} {caches:>11} {:>12.1} {:>9.1} {:>9.1} {:>9.1}  {state}",
        c.services,
        c.services * c.endpoints,
        c.load.as_secs_f64(),
        c.to_sync.as_secs_f64(),
        mib(c.at_end.rss_kb),
        mib(c.peak_rss_kb),
        mib(c.at_end.hwm_kb),
        mib(c.apiserver_rss_kb),
    );
}

#[cfg(test)]
mod tests;
