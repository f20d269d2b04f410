//! One proxy's run of part U, in order: full sync from start, programming latency (endpoint
//! replaced, Service added), first-packet cost, CPU under churn, VmHWM.

use std::time::Instant;

use super::{Proxy, Shared, UParams, URow, agent, cpu_seconds, since, spawn_proxy, wire};
use crate::agent::Agent;
use crate::error::BenchError;
use crate::netns::Netns;
use crate::p4::read_mem;
use crate::procs::{Bins, Proc};

/// A change slower than this stops the proxy's run: at that pace the timed changes and the churn
/// would take hours (kube-proxy nftables at 10k / 100k here: ~90 s per sync).
const TOO_SLOW_MS: f64 = 30_000.0;

/// A reply's whitespace-separated field `i` as a number.
fn field(reply: &str, i: usize) -> Result<f64, BenchError> {
    reply
        .split_whitespace()
        .nth(i)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| BenchError::Check(format!("agent reply {reply:?}: no field {i}")))
}

struct Run<'a> {
    sh: &'a Shared,
    p: &'a UParams,
    agent: Agent,
    proxy: Proc,
    log: std::path::PathBuf,
    round: usize,
}

impl Run<'_> {
    fn call(&mut self, request: &str) -> Result<String, BenchError> {
        self.agent.call(request).map_err(|m| {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            BenchError::Check(format!(
                "{m}; {} log tail:\n{}",
                self.proxy.name,
                crate::cluster::tail(&log, 12)
            ))
        })
    }

    fn limit_ms(&self) -> u128 {
        self.p.limit.as_millis()
    }

    /// Service index of the `k`-th replace of this round: distinct across rounds (97 is coprime
    /// with the sizes used), so every replace is a real change.
    fn replace_index(&self, k: usize) -> usize {
        (1 + self.round * (self.p.changes + 1) + k) * 97 % self.p.services.max(1)
    }

    /// One endpoint replaced; returns the agent's reply (see `ops::replace`).
    fn replace(&mut self, k: usize) -> Result<String, BenchError> {
        let req = format!(
            "replace {} {} {} {} {}",
            self.sh.api,
            self.replace_index(k),
            self.p.endpoints,
            wire::PROBE_IP,
            self.limit_ms()
        );
        self.call(&req)
    }

    fn pid(&self) -> u32 {
        self.proxy.pid()
    }
}

/// Everything for one proxy; figures land in `row` as they are measured.
pub(super) fn one(
    proxy: Proxy,
    round: usize,
    sh: &Shared,
    bins: &Bins,
    p: &UParams,
    row: &mut URow,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    let ns: Netns = wire::node(proxy.tag(), round, &sh.cp)?;
    let mut agent = agent(&ns)?;
    // The newest Service, created before the proxy starts: it answers once the full sync is live
    // (kube-proxy writes its first sync in one restore or one nft transaction; svcnet writes the
    // dispatch that references every chain in its last call).
    let sentinel = agent
        .call(&format!(
            "add {} up-sentinel-{round} {} 0",
            sh.api,
            wire::PROBE_IP
        ))
        .map_err(BenchError::Check)?;
    let (proc_, log) = spawn_proxy(proxy, sh, bins, &ns)?;
    let t0 = Instant::now();
    let mut run = Run {
        sh,
        p,
        agent,
        proxy: proc_,
        log,
        round,
    };
    let probe = format!("probe {sentinel}:{} {}", super::ops::SERVICE_PORT, run.limit_ms());
    if let Err(e) = run.call(&probe) {
        // Without a live ruleset nothing else can be timed; the wait is a lower bound.
        row.full_sync_over = Some(t0.elapsed());
        return Err(e);
    }
    row.full_sync = Some(t0.elapsed());
    if sh.legacy_path.is_some() && proxy.iptables_mode() {
        rules_only_in_legacy(&ns, proxy)?;
    }
    row.hwm_sync_kb = read_mem(run.pid()).map_or(0, |m| m.hwm_kb);
    progress(&format!(
        "  full sync live after {:.1} s, VmHWM {:.0} MiB",
        since(t0),
        row.hwm_sync_kb as f64 / 1024.0
    ));
    std::thread::sleep(p.gap);
    latency(&mut run, row)?;
    // Every sample, in order: an outlier is easier to explain next to its neighbours.
    let ms = |v: &[f64]| v.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(" ");
    progress(&format!(
        "  write -> live (ms): replace {}; add {}",
        ms(&row.replace_ms),
        ms(&row.add_ms)
    ));
    churn(&mut run, row)?;
    row.hwm_end_kb = read_mem(run.pid()).map_or(0, |m| m.hwm_kb);
    progress(&format!(
        "  churn: {:.2} CPU s / 1000 changes over {:.1} s, VmHWM {:.0} MiB",
        row.cpu_per_1000.unwrap_or(f64::NAN),
        row.churn_wall.as_secs_f64(),
        row.hwm_end_kb as f64 / 1024.0
    ));
    if !run.proxy.alive() {
        return Err(BenchError::Check(format!(
            "{} exited during the run",
            proxy.name()
        )));
    }
    Ok(())
}

/// Timed replaces and adds (each from an idle proxy), then connects through the added Services.
fn latency(run: &mut Run<'_>, row: &mut URow) -> Result<(), BenchError> {
    let gap = run.p.gap;
    for k in 0..run.p.changes {
        let reply = run.replace(k)?;
        let ms = field(&reply, 1)? / 1e6;
        row.replace_ms.push(ms);
        row.replace_put_ms.push(field(&reply, 0)? / 1e6);
        timeline("replace", k, &reply, 3);
        if ms > TOO_SLOW_MS {
            return Err(BenchError::Check(format!(
                "an endpoint change took {:.0} s to go live: the other changes and the churn are not timed",
                ms / 1e3
            )));
        }
        std::thread::sleep(gap);
    }
    let mut vips = Vec::new();
    for k in 0..run.p.changes {
        // Named to sort in the middle of the `svc-NNNNN` Services: svcnet's flat list is ordered
        // by name and kube-proxy's by map iteration (a random place), so both average a half walk.
        let req = format!(
            "add {} svc-{:05}-up{}-{k} {} {}",
            run.sh.api,
            run.p.services / 2,
            run.round,
            wire::PROBE_IP,
            run.limit_ms()
        );
        let reply = run.call(&req)?;
        row.add_ms.push(field(&reply, 1)? / 1e6);
        row.add_post_ms.push(field(&reply, 4)? / 1e6);
        timeline("add", k, &reply, 5);
        vips.extend(reply.split_whitespace().nth(3).map(str::to_owned));
        std::thread::sleep(gap);
    }
    for vip in vips {
        let addr = format!("{vip}:{}", super::ops::SERVICE_PORT)
            .parse()
            .map_err(|e| BenchError::Check(format!("cluster IP {vip}: {e}")))?;
        let times = run.agent.connect_us(addr, run.p.connects)?;
        row.connect_us.extend(times);
    }
    Ok(())
}

/// With `SVCNET_BENCH_KEEP`, one stderr line per timed change: when it started (UTC, as the kept
/// proxy logs print time) and the agent's reply, to place the change in the proxy's log.
fn timeline(kind: &str, k: usize, reply: &str, start_field: usize) {
    if std::env::var_os("SVCNET_BENCH_KEEP").is_none() {
        return;
    }
    let start = field(reply, start_field).unwrap_or(0.0) / 1e6;
    let secs_of_day = start % 86_400.0;
    let (h, m, s) = (
        (secs_of_day / 3600.0).floor(),
        (secs_of_day % 3600.0 / 60.0).floor(),
        secs_of_day % 60.0,
    );
    eprintln!("  {kind} {k} at {h:02}:{m:02}:{s:09.6}Z: agent reply {reply}");
}

/// CPU over the churn: from before the first change to the moment one more change (the barrier,
/// written after the churn) is live, so every churn change has been synced.
fn churn(run: &mut Run<'_>, row: &mut URow) -> Result<(), BenchError> {
    let Some(before) = cpu_seconds(run.pid()) else {
        return Err(BenchError::Check("no /proc stat for the proxy".into()));
    };
    let t0 = Instant::now();
    let req = format!(
        "churn {} {} {} {} {} {}",
        run.sh.api, run.round, run.p.services, run.p.endpoints, run.p.churn, run.p.churn_per_s
    );
    run.call(&req)?;
    run.replace(run.p.changes)?;
    row.churn_wall = t0.elapsed();
    let after = cpu_seconds(run.pid()).unwrap_or(before);
    let changes = (run.p.churn + 1) as f64;
    row.cpu_per_1000 = Some((after - before) / changes * 1000.0);
    Ok(())
}

/// With `--up-iptables legacy`, an iptables-mode proxy's rules must be in iptables-legacy's nat table
/// and not in iptables-nft's: else the figures would be of the other backend.
fn rules_only_in_legacy(ns: &Netns, proxy: Proxy) -> Result<(), BenchError> {
    let holds = |save: &str| -> Result<bool, BenchError> {
        let out = ns
            .command(save)
            .args(["-t", "nat"])
            .output()
            .map_err(|e| BenchError::io(save, e))?;
        Ok(String::from_utf8_lossy(&out.stdout).contains(":KUBE-SERVICES"))
    };
    match (holds("iptables-legacy-save")?, holds("iptables-nft-save")?) {
        (true, false) => Ok(()),
        (legacy, nft) => Err(BenchError::Check(format!(
            "{}: KUBE-SERVICES in iptables-legacy: {legacy}, in iptables-nft: {nft} (want only legacy)",
            proxy.name()
        ))),
    }
}
