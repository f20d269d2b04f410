//! Chain traversal: the kernel's hook order for a NEW connection, jumps, returns, verdicts,
//! and forks at `statistic random` rules.

use super::matcher::{PacketView, eval, is_local};
use super::path::{Flow, Path};
use super::rules::{DnatTo, Policy, Rule, Ruleset, Target};
use super::{Hook, Outcome, Packet, Step, Trace, TraceOptions};
use std::net::SocketAddr;

/// Deeper jump nesting than this is a loop (the kernel refuses loops when rules are loaded).
const MAX_DEPTH: usize = 64;

pub(crate) struct Walker<'a> {
    rules: &'a Ruleset,
    packet: &'a Packet,
    opts: &'a TraceOptions,
    warnings: Vec<String>,
    outcomes: Vec<Outcome>,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(rules: &'a Ruleset, packet: &'a Packet, opts: &'a TraceOptions) -> Self {
        Walker {
            rules,
            packet,
            opts,
            warnings: Vec::new(),
            outcomes: Vec::new(),
        }
    }

    pub(crate) fn run(mut self) -> Trace {
        let start = Path::start(self.packet, self.opts);
        let mut paths = vec![start];
        match self.opts.hook {
            Hook::Prerouting => {
                paths = self.stages(
                    paths,
                    &[
                        ("raw", "PREROUTING"),
                        ("mangle", "PREROUTING"),
                        ("nat", "PREROUTING"),
                    ],
                );
                // Routing decision on the (possibly DNATed) destination.
                let (local, forward): (Vec<Path>, Vec<Path>) = paths
                    .into_iter()
                    .partition(|p| is_local(&self.opts.node_ips, p.dst));
                let local = self.stages(
                    local,
                    &[("mangle", "INPUT"), ("filter", "INPUT"), ("nat", "INPUT")],
                );
                let forward = self.stages(
                    forward,
                    &[
                        ("mangle", "FORWARD"),
                        ("filter", "FORWARD"),
                        ("mangle", "POSTROUTING"),
                        ("nat", "POSTROUTING"),
                    ],
                );
                for mut p in local {
                    p.notes
                        .push("delivered to a local process on the node (no POSTROUTING)".to_string());
                    self.finish(p, Flow::Accept);
                }
                for p in forward {
                    self.finish(p, Flow::Accept);
                }
            }
            Hook::Output => {
                paths = self.stages(
                    paths,
                    &[
                        ("raw", "OUTPUT"),
                        ("mangle", "OUTPUT"),
                        ("nat", "OUTPUT"),
                        ("filter", "OUTPUT"),
                        ("mangle", "POSTROUTING"),
                        ("nat", "POSTROUTING"),
                    ],
                );
                let (mut local, remote): (Vec<Path>, Vec<Path>) = paths
                    .into_iter()
                    .partition(|p| is_local(&self.opts.node_ips, p.dst));
                // Looped back over lo: the receive side runs the INPUT chains (nat was already
                // decided for this connection on the way out).
                for p in &mut local {
                    p.in_iface = Some("lo".to_string());
                }
                let local = self.stages(local, &[("mangle", "INPUT"), ("filter", "INPUT")]);
                for p in local.into_iter().chain(remote) {
                    self.finish(p, Flow::Accept);
                }
            }
        }
        Trace {
            outcomes: self.outcomes,
            warnings: self.warnings,
        }
    }

    fn finish(&mut self, path: Path, flow: Flow) {
        self.outcomes.push(path.outcome(flow));
    }

    /// Runs each built-in chain in turn; paths dropped or rejected become outcomes.
    fn stages(&mut self, mut paths: Vec<Path>, stages: &[(&str, &str)]) -> Vec<Path> {
        for (table, chain) in stages {
            let mut next = Vec::with_capacity(paths.len());
            for path in paths {
                for (mut p, flow) in self.builtin(table, chain, path) {
                    match flow {
                        Flow::Accept => next.push(p),
                        Flow::Continue => {
                            let policy = self.rules.chain(table, chain).and_then(|c| c.policy);
                            if policy == Some(Policy::Drop) {
                                p.notes.push(format!("{table} {chain} policy DROP"));
                                self.finish(p, Flow::Drop);
                            } else {
                                next.push(p);
                            }
                        }
                        Flow::Drop => self.finish(p, Flow::Drop),
                        Flow::Reject => self.finish(p, Flow::Reject),
                    }
                }
            }
            paths = next;
        }
        paths
    }

    fn builtin(&mut self, table: &str, chain: &str, path: Path) -> Vec<(Path, Flow)> {
        if self.rules.chain(table, chain).is_none() {
            return vec![(path, Flow::Continue)];
        }
        self.chain(table, chain, 0, path, 0)
    }

    fn warn(&mut self, warning: String) {
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    /// Walks `chain` from rule `start`.
    fn chain(
        &mut self,
        table: &str,
        chain: &str,
        start: usize,
        path: Path,
        depth: usize,
    ) -> Vec<(Path, Flow)> {
        let rules: &'a Ruleset = self.rules;
        let Some(rules) = rules.chain(table, chain).map(|c| &c.rules) else {
            return vec![(path, Flow::Continue)];
        };
        let mut out = Vec::new();
        let mut path = path;
        for (index, rule) in rules.iter().enumerate().skip(start) {
            let view = PacketView {
                src: self.packet.src,
                dst: path.dst,
                dport: path.dport,
                proto: self.packet.proto,
                in_iface: path.in_iface.as_deref(),
                mark: path.mark,
                dnat_done: path.dnat.is_some(),
                node_ips: &self.opts.node_ips,
            };
            let result = eval(rule, &view);
            for w in result.warnings {
                self.warn(w);
            }
            let q = result.probability;
            if q <= 0.0 {
                continue;
            }
            if q >= 1.0 {
                out.extend(self.apply(table, chain, index, rule, path, &result.affinity_lists, depth));
                return out;
            }
            // statistic random: both branches happen, weighted. The matching branch is walked
            // now; the other one goes on with the next rule in this loop (no recursion, so a
            // service with thousands of endpoints does not grow the stack).
            let mut hit = path.clone();
            hit.probability *= q;
            path.probability *= 1.0 - q;
            out.extend(self.apply(table, chain, index, rule, hit, &result.affinity_lists, depth));
        }
        out.push((path, Flow::Continue));
        out
    }

    /// Applies the target of a matched rule, then continues as the kernel would.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        table: &str,
        chain: &str,
        index: usize,
        rule: &Rule,
        mut path: Path,
        affinity_lists: &[String],
        depth: usize,
    ) -> Vec<(Path, Flow)> {
        path.steps.push(Step {
            table: table.to_string(),
            chain: chain.to_string(),
            rule: rule.text.clone(),
            line: rule.line,
        });
        match &rule.target {
            Target::None => self.chain(table, chain, index + 1, path, depth),
            Target::Other(name) => {
                path.notes.push(format!(
                    "line {}: target {name} does not change the packet's fate",
                    rule.line
                ));
                self.chain(table, chain, index + 1, path, depth)
            }
            Target::Mark(op) => {
                path.mark = op.apply(path.mark);
                self.chain(table, chain, index + 1, path, depth)
            }
            Target::Jump(name) | Target::Goto(name) => {
                if self.rules.chain(table, name).is_none() {
                    self.warn(format!(
                        "line {}: jump to {name}, which is not a chain of table {table}; ignored",
                        rule.line
                    ));
                    return self.chain(table, chain, index + 1, path, depth);
                }
                if depth >= MAX_DEPTH {
                    self.warn(format!(
                        "line {}: chains nest deeper than {MAX_DEPTH} (a loop?); path cut",
                        rule.line
                    ));
                    return vec![(path, Flow::Drop)];
                }
                let inner = self.chain(table, name, 0, path, depth + 1);
                if matches!(rule.target, Target::Goto(_)) {
                    // -g: falling off the target returns to our caller, not to us.
                    return inner;
                }
                let mut out = Vec::new();
                for (p, flow) in inner {
                    match flow {
                        Flow::Continue => out.extend(self.chain(table, chain, index + 1, p, depth)),
                        other => out.push((p, other)),
                    }
                }
                out
            }
            Target::Return => vec![(path, Flow::Continue)],
            Target::Accept => vec![(path, Flow::Accept)],
            Target::Drop => vec![(path, Flow::Drop)],
            Target::Reject => vec![(path, Flow::Reject)],
            Target::Dnat(to) => self.dnat(rule, to, affinity_lists, path),
            Target::Masquerade | Target::Snat => {
                path.masquerade = true;
                vec![(path, Flow::Accept)]
            }
        }
    }

    /// DNAT to `to` (a range: its first address and port), noting the affinity lists the rule set.
    fn dnat(
        &mut self,
        rule: &Rule,
        to: &DnatTo,
        affinity_lists: &[String],
        mut path: Path,
    ) -> Vec<(Path, Flow)> {
        let port = to.port.unwrap_or(path.dport);
        let dest = SocketAddr::new(to.addr, port);
        if to.ranged {
            self.warn(format!(
                "line {}: DNAT to a range; the tracer follows its first address/port",
                rule.line
            ));
        }
        for list in affinity_lists {
            path.notes.push(format!(
                "sessionAffinity: later connections from this client ({}) stick to {dest} (recent list {list})",
                self.packet.src
            ));
        }
        path.dst = to.addr;
        path.dport = port;
        path.dnat = Some(dest);
        vec![(path, Flow::Accept)]
    }
}
