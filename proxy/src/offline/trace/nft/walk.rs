//! Walks a NEW connection through an nftables table as the kernel would: base chains of each hook by
//! priority, routing, jumps and gotos, verdict maps, `numgen random` forks, NAT. Reading one rule is
//! [`super::rule`]'s.

use super::matches::is_local;
use super::parse::{NftRule, NftRuleset};
use super::rule::{Eval, Reader, warn_once};
use super::verdict::{Action, verdict_action};
use crate::offline::trace::path::{Flow, Path};
use crate::offline::trace::{Hook, Outcome, Packet, Step, Trace, TraceOptions};

const MAX_DEPTH: usize = 64;

pub(super) struct Walker<'a> {
    rules: &'a NftRuleset,
    table: String,
    packet: &'a Packet,
    opts: &'a TraceOptions,
    warnings: Vec<String>,
    outcomes: Vec<Outcome>,
}

impl<'a> Walker<'a> {
    pub(super) fn new(rules: &'a NftRuleset, packet: &'a Packet, opts: &'a TraceOptions) -> Self {
        let family = if packet.dst.is_ipv6() { "ip6" } else { "ip" };
        Walker {
            rules,
            table: format!("{family} kube-proxy"),
            packet,
            opts,
            warnings: Vec::new(),
            outcomes: Vec::new(),
        }
    }

    pub(super) fn run(mut self) -> Trace {
        let start = Path::start(self.packet, self.opts);
        let local = |p: &Path, opts: &TraceOptions| is_local(&opts.node_ips, p.dst);
        match self.opts.hook {
            Hook::Prerouting => {
                let paths = self.hook("prerouting", vec![start]);
                let (to_node, forward): (Vec<Path>, Vec<Path>) =
                    paths.into_iter().partition(|p| local(p, self.opts));
                for mut p in self.hook("input", to_node) {
                    p.notes
                        .push("delivered to a local process on the node (no postrouting)".into());
                    self.finish(p, Flow::Accept);
                }
                let forward = self.hook("forward", forward);
                for p in self.hook("postrouting", forward) {
                    self.finish(p, Flow::Accept);
                }
            }
            Hook::Output => {
                let paths = self.hook("output", vec![start]);
                let paths = self.hook("postrouting", paths);
                let (mut to_node, remote): (Vec<Path>, Vec<Path>) =
                    paths.into_iter().partition(|p| local(p, self.opts));
                for p in &mut to_node {
                    p.in_iface = Some("lo".into());
                }
                for p in self.hook("input", to_node).into_iter().chain(remote) {
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

    /// Every base chain of `hook`, by priority; dropped and rejected paths become outcomes.
    fn hook(&mut self, hook: &str, mut paths: Vec<Path>) -> Vec<Path> {
        let mut bases: Vec<(&String, i32)> = self
            .rules
            .chains
            .iter()
            .filter_map(|(name, c)| {
                c.hook
                    .as_ref()
                    .filter(|(h, _)| h == hook)
                    .map(|(_, p)| (name, *p))
            })
            .collect();
        bases.sort_by_key(|(name, p)| (*p, (*name).clone()));
        for (name, _) in bases {
            let mut next = Vec::with_capacity(paths.len());
            for path in paths {
                for (p, flow) in self.chain(name, 0, path, 0) {
                    match flow {
                        // A base chain's policy is accept: the next base chain sees the packet.
                        Flow::Accept | Flow::Continue => next.push(p),
                        other => self.finish(p, other),
                    }
                }
            }
            paths = next;
        }
        paths
    }

    fn warn(&mut self, warning: String) {
        warn_once(&mut self.warnings, warning);
    }

    /// Reads one rule against `path`.
    fn eval(&mut self, rule: &NftRule, path: &Path) -> Eval {
        Reader {
            rules: self.rules,
            packet: self.packet,
            opts: self.opts,
            warnings: &mut self.warnings,
        }
        .eval(rule, path)
    }

    fn chain(&mut self, chain: &str, start: usize, path: Path, depth: usize) -> Vec<(Path, Flow)> {
        let rules: &'a NftRuleset = self.rules;
        let Some(c) = rules.chains.get(chain) else {
            return vec![(path, Flow::Continue)];
        };
        for (index, rule) in c.rules.iter().enumerate().skip(start) {
            let e = self.eval(rule, &path);
            if !e.matched {
                continue;
            }
            return self.apply(chain, index, rule, e, path, depth);
        }
        vec![(path, Flow::Continue)]
    }

    fn apply(
        &mut self,
        chain: &str,
        index: usize,
        rule: &NftRule,
        e: Eval,
        mut path: Path,
        depth: usize,
    ) -> Vec<(Path, Flow)> {
        path.steps.push(Step {
            table: self.table.clone(),
            chain: chain.to_string(),
            rule: rule.text.clone(),
            line: rule.line,
        });
        path.notes.extend(e.notes);
        if let Some(m) = e.mark {
            path.mark = m;
        }
        match e.action {
            Action::Next => self.chain(chain, index + 1, path, depth),
            Action::Return => vec![(path, Flow::Continue)],
            Action::Accept => vec![(path, Flow::Accept)],
            Action::Drop => vec![(path, Flow::Drop)],
            Action::Reject => vec![(path, Flow::Reject)],
            Action::Dnat(to) => {
                path.dst = to.ip();
                path.dport = to.port();
                path.dnat = Some(to);
                vec![(path, Flow::Accept)]
            }
            Action::DnatChoices(choices) => self.dnat_choices(chain, index, choices, path, depth),
            Action::Masquerade => {
                path.masquerade = true;
                vec![(path, Flow::Accept)]
            }
            Action::Jump(to) => self.enter(chain, index, rule, path, depth, &to, false),
            Action::Goto(to) => self.enter(chain, index, rule, path, depth, &to, true),
            Action::Random(verdicts) => {
                let n = verdicts.len().max(1) as f64;
                let mut out = Vec::new();
                for v in verdicts {
                    let mut p = path.clone();
                    p.probability /= n;
                    match verdict_action(&v) {
                        Some(Action::Goto(to)) => {
                            out.extend(self.enter(chain, index, rule, p, depth, &to, true))
                        }
                        Some(Action::Jump(to)) => {
                            out.extend(self.enter(chain, index, rule, p, depth, &to, false))
                        }
                        Some(Action::Drop) => out.push((p, Flow::Drop)),
                        Some(Action::Accept) => out.push((p, Flow::Accept)),
                        Some(Action::Return) => out.push((p, Flow::Continue)),
                        _ => {
                            self.warn(format!("line {}: numgen verdict {v:?} not understood", rule.line));
                            out.push((p, Flow::Continue));
                        }
                    }
                }
                out
            }
        }
    }

    /// One path per slot of a data-map DNAT, equally likely; a missing slot goes on to the next rule.
    fn dnat_choices(
        &mut self,
        chain: &str,
        index: usize,
        choices: Vec<Option<std::net::SocketAddr>>,
        path: Path,
        depth: usize,
    ) -> Vec<(Path, Flow)> {
        let n = choices.len().max(1) as f64;
        let mut out = Vec::new();
        for choice in choices {
            let mut p = path.clone();
            p.probability /= n;
            match choice {
                Some(to) => {
                    p.dst = to.ip();
                    p.dport = to.port();
                    p.dnat = Some(to);
                    out.push((p, Flow::Accept));
                }
                None => out.extend(self.chain(chain, index + 1, p, depth)),
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn enter(
        &mut self,
        chain: &str,
        index: usize,
        rule: &NftRule,
        path: Path,
        depth: usize,
        to: &str,
        goto: bool,
    ) -> Vec<(Path, Flow)> {
        if !self.rules.chains.contains_key(to) {
            self.warn(format!(
                "line {}: jump to {to}, which is not a chain of the table; ignored",
                rule.line
            ));
            return self.chain(chain, index + 1, path, depth);
        }
        if depth >= MAX_DEPTH {
            self.warn(format!(
                "line {}: chains nest deeper than {MAX_DEPTH}; path cut",
                rule.line
            ));
            return vec![(path, Flow::Drop)];
        }
        let inner = self.chain(to, 0, path, depth + 1);
        if goto {
            return inner;
        }
        let mut out = Vec::new();
        for (p, flow) in inner {
            match flow {
                Flow::Continue => out.extend(self.chain(chain, index + 1, p, depth)),
                other => out.push((p, other)),
            }
        }
        out
    }
}
