//! Running the corpus: each step's writes through the API (as admin, kubectl in the control plane's
//! namespace), the marker moved last, both proxies waited for, and both nodes' rules compared.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::compare::compare;
use super::compare_nft;
use super::corpus::{Step, Write, marker_service, marker_slice};
use super::{Env, Mode, list};

/// How long a step may take to reach both nodes' rules.
const SETTLE: Duration = Duration::from_secs(30);
/// After both nodes settled, how long their rules may still take to agree: a watch event of a
/// step can reach a proxy after the marker's (Services and EndpointSlices are separate watches),
/// and on a loaded 2-core machine the next sync after it may wait out a min-sync-period and a slow
/// restore. A real difference outlasts this; agreeing returns at once.
const AGREE: Duration = Duration::from_secs(10);

/// What a run measured.
#[derive(Debug, Default)]
pub struct Report {
    pub states: usize,
    /// nftables mode: states in which upstream still held flushed service chains awaiting deletion
    /// (see [`compare_nft`]).
    pub with_flushed_chains: usize,
    /// The slowest step from its first write to both nodes agreeing, and its name.
    pub slowest: Duration,
    pub slowest_step: String,
}

impl Env {
    fn write(&self, w: &Write) {
        match w {
            Write::Apply(objs) => self.apply(objs, false),
            Write::Status(objs) => self.apply(objs, true),
            Write::Delete { ns, objects } => {
                let refs: Vec<String> = objects.iter().map(|(k, n)| format!("{k}/{n}")).collect();
                let mut args = vec!["delete", "-n", ns, "--wait=false"];
                args.extend(refs.iter().map(String::as_str));
                self.kubectl(&args, None);
            }
            Write::DeleteAll { ns } => {
                self.kubectl(
                    &[
                        "delete",
                        "service,endpointslice",
                        "--all",
                        "-n",
                        ns,
                        "--wait=false",
                    ],
                    None,
                );
            }
        }
    }

    /// Server-side apply (one field manager, forced: the corpus owns its objects).
    fn apply(&self, objs: &[Value], status: bool) {
        let body = list(objs.to_vec()).to_string();
        let mut args = vec![
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=differential",
            "-f",
            "-",
        ];
        if status {
            args.push("--subresource=status");
        }
        self.kubectl(&args, Some(&body));
    }

    /// Runs every step and compares the nodes after each; panics at the first difference with the
    /// step, the seed and the diff.
    pub fn run(&mut self, steps: &[Step], seed: u64) -> Report {
        self.apply(&[marker_service()], false);
        let mut report = Report::default();
        for (n, step) in steps.iter().enumerate() {
            let t0 = Instant::now();
            let (marker, ip) = marker_slice(n);
            // The marker rides in the step's last apply when there is one (a kubectl run less).
            match step.writes.split_last() {
                Some((Write::Apply(objs), rest)) => {
                    rest.iter().for_each(|w| self.write(w));
                    let mut objs = objs.clone();
                    objs.push(marker);
                    self.apply(&objs, false);
                }
                _ => {
                    step.writes.iter().for_each(|w| self.write(w));
                    self.apply(&[marker], false);
                }
            }
            self.wait_settled(&ip, SETTLE);
            let (diff, flushed) = self.agree(AGREE);
            if flushed {
                report.with_flushed_chains += 1;
            }
            if let Some(diff) = diff {
                panic!(
                    "state {} ({}) differs (seed {seed}; rerun with SVCNET_DIFF_SEED={seed}):\n{diff}\n{}\n{}",
                    n + 1,
                    step.name,
                    self.upstream.log_tail(30),
                    self.svcnet.log_tail(30)
                );
            }
            report.states += 1;
            if t0.elapsed() > report.slowest {
                report.slowest = t0.elapsed();
                report.slowest_step = step.name.clone();
            }
        }
        report
    }

    /// Polls both nodes' IPv4 and IPv6 rules until they agree (None) or `within` passed (the diff);
    /// and whether upstream's dumps held flushed chains awaiting deletion (nftables mode).
    fn agree(&self, within: Duration) -> (Option<String>, bool) {
        let start = Instant::now();
        loop {
            let mut flushed = false;
            let diff = [false, true].into_iter().find_map(|v6| {
                let (up, sv) = (self.upstream.save(v6), self.svcnet.save(v6));
                match self.upstream.mode {
                    Mode::Iptables => {
                        let what = if v6 { "ip6tables-save" } else { "iptables-save" };
                        compare(what, &up, &sv)
                    }
                    Mode::Nftables => {
                        let what = if v6 {
                            "nft list table ip6"
                        } else {
                            "nft list table ip"
                        };
                        let c = compare_nft::compare(what, &up, &sv);
                        flushed |= c.flushed > 0;
                        c.diff
                    }
                }
            });
            if diff.is_none() || start.elapsed() >= within {
                return (diff, flushed);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
