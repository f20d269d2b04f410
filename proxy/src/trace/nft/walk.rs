//! Walks a NEW connection through an nftables table as the kernel would: base chains of each hook by
//! priority, routing, jumps and gotos, verdict maps, `numgen random` forks, NAT.
//!
//! Rules are read word by word: a rule is a run of matches (`selector [. selector]* [op] value`)
//! and statements. What kube-proxy's nftables mode writes is understood; anything else becomes a
//! warning and the rule is treated as not matching.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

use super::parse::{NftRule, NftRuleset, elements};
use crate::trace::path::{Flow, Path};
use crate::trace::{Hook, Outcome, Packet, Step, Trace, TraceOptions};

const MAX_DEPTH: usize = 64;

/// What a rule does once its matches hold.
enum Action {
    Next,
    Jump(String),
    Goto(String),
    Return,
    Accept,
    Drop,
    Reject,
    Dnat(SocketAddr),
    Masquerade,
    /// `numgen random mod N vmap { i : verdict ... }`.
    Random(Vec<Vec<String>>),
}

/// A rule read against one path: does it match, what it does, what it changes.
struct Eval {
    matched: bool,
    action: Action,
    mark: Option<u32>,
    notes: Vec<String>,
}

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
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
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

    /// Reads one rule against `path`.
    fn eval(&mut self, rule: &NftRule, path: &Path) -> Eval {
        let w: Vec<&str> = rule.tokens.iter().map(String::as_str).collect();
        let mut e = Eval {
            matched: true,
            action: Action::Next,
            mark: None,
            notes: Vec::new(),
        };
        let mut i = 0;
        while i < w.len() {
            // Statements.
            match w[i] {
                "counter" => {
                    i += 1;
                    while matches!(w.get(i), Some(&("packets" | "bytes"))) {
                        i += 2;
                    }
                    continue;
                }
                "comment" => {
                    i += 2;
                    continue;
                }
                "jump" | "goto" => {
                    let to = w.get(i + 1).map(|s| s.to_string()).unwrap_or_default();
                    e.action = if w[i] == "jump" {
                        Action::Jump(to)
                    } else {
                        Action::Goto(to)
                    };
                    return e;
                }
                "return" => {
                    e.action = Action::Return;
                    return e;
                }
                "accept" => {
                    e.action = Action::Accept;
                    return e;
                }
                "drop" => {
                    e.action = Action::Drop;
                    return e;
                }
                "reject" => {
                    e.action = Action::Reject;
                    return e;
                }
                "masquerade" => {
                    e.action = Action::Masquerade;
                    return e;
                }
                "dnat" => {
                    let to = w[i + 1..]
                        .iter()
                        .skip_while(|x| **x != "to")
                        .nth(1)
                        .copied()
                        .unwrap_or("");
                    match parse_dnat(to, path.dport) {
                        Some(a) => e.action = Action::Dnat(a),
                        None => {
                            self.warn(format!("line {}: dnat target {to:?} not understood", rule.line));
                            e.matched = false;
                        }
                    }
                    return e;
                }
                "update" | "add" => {
                    // `update @affinity-... { ip saddr }`: remembers the client for later connections.
                    let set = w.get(i + 1).map(|s| s.trim_start_matches('@')).unwrap_or("");
                    e.notes.push(format!(
                        "sessionAffinity: later connections from this client ({}) stick to this endpoint (set {set})",
                        self.packet.src
                    ));
                    i = skip_braces(&w, i + 2);
                    continue;
                }
                _ => {}
            }
            if w[i] == "numgen" {
                // numgen random mod N vmap { ... }
                let open = w.iter().skip(i).position(|x| *x == "{").map(|p| p + i);
                let Some(open) = open else {
                    self.warn(format!("line {}: numgen without a map", rule.line));
                    e.matched = false;
                    return e;
                };
                let close = skip_braces(&w, open);
                let inner: Vec<String> = w[open + 1..close.saturating_sub(1)]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                let mut verdicts: Vec<(u64, Vec<String>)> = elements(&inner)
                    .into_iter()
                    .filter_map(|(k, v)| Some((k.first()?.parse().ok()?, v?)))
                    .collect();
                verdicts.sort_by_key(|(k, _)| *k);
                e.action = Action::Random(verdicts.into_iter().map(|(_, v)| v).collect());
                return e;
            }
            // A match: selector [. selector]* [and MASK | & MASK] [op] value | vmap | set.
            let mut sels = Vec::new();
            loop {
                let Some((sel, used)) = selector(&w[i..]) else {
                    self.warn(format!(
                        "line {}: {:?} not understood; rule treated as not matching",
                        rule.line, w[i]
                    ));
                    e.matched = false;
                    return e;
                };
                sels.push(sel);
                i += used;
                if w.get(i) == Some(&".") {
                    i += 1;
                    continue;
                }
                break;
            }
            let mut mask = None;
            if matches!(w.get(i), Some(&("and" | "&"))) {
                mask = w.get(i + 1).and_then(|m| parse_u32(m));
                i += 2;
            }
            // `mark set mark or X` / `meta mark set meta mark | X`.
            if w.get(i) == Some(&"set") {
                let rest = &w[i + 1..];
                let (op_at, value) = match rest {
                    ["mark", op, v, ..] => (*op, *v),
                    ["meta", "mark", op, v, ..] => (*op, *v),
                    _ => ("", ""),
                };
                let Some(v) = parse_u32(value) else {
                    self.warn(format!("line {}: mark statement not understood", rule.line));
                    e.matched = false;
                    return e;
                };
                let cur = e.mark.unwrap_or(path.mark);
                e.mark = Some(match op_at {
                    "or" | "|" => cur | v,
                    "xor" | "^" => cur ^ v,
                    "and" | "&" => cur & v,
                    _ => v,
                });
                i += 1 + if rest.first() == Some(&"meta") { 4 } else { 3 };
                continue;
            }
            let mut negate = false;
            match w.get(i) {
                Some(&"!=") => {
                    negate = true;
                    i += 1;
                }
                Some(&"==") => i += 1,
                _ => {}
            }
            let values: Vec<String> = sels
                .iter()
                .map(|s| self.value(*s, path, mask, rule.line))
                .collect();
            if w.get(i) == Some(&"vmap") {
                let found = match w.get(i + 1) {
                    Some(name) if name.starts_with('@') => self.lookup(&name[1..], &sels, &values).flatten(),
                    Some(&"{") => {
                        let close = skip_braces(&w, i + 1);
                        let inner: Vec<String> = w[i + 2..close.saturating_sub(1)]
                            .iter()
                            .map(|s| s.to_string())
                            .collect();
                        elements(&inner)
                            .into_iter()
                            .find(|(k, _)| key_matches(&sels, &values, k))
                            .and_then(|(_, v)| v)
                    }
                    _ => None,
                };
                match found.as_deref().and_then(verdict_action) {
                    Some(action) => {
                        e.action = action;
                        return e;
                    }
                    None => {
                        e.matched = false;
                        return e;
                    }
                }
            }
            let Some(value) = w.get(i).copied() else {
                self.warn(format!("line {}: match without a value", rule.line));
                e.matched = false;
                return e;
            };
            let hit = if let Some(set) = value.strip_prefix('@') {
                let dynamic = set.starts_with("affinity-");
                if dynamic {
                    e.notes.push(format!(
                        "sessionAffinity: a client already in {set} would skip the random choice; a new client is not"
                    ));
                }
                self.lookup(set, &sels, &values).is_some()
            } else if value == "{" {
                let close = skip_braces(&w, i);
                let inner: Vec<String> = w[i + 1..close.saturating_sub(1)]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                let hit = elements(&inner)
                    .iter()
                    .any(|(k, _)| key_matches(&sels, &values, k));
                i = close - 1;
                hit
            } else {
                key_matches(&sels, &values, &[value.to_string()])
            };
            i += 1;
            if hit == negate {
                e.matched = false;
                return e;
            }
        }
        e
    }

    /// The element of set `name` matching `values`: `Some(verdict)` when found.
    fn lookup(&mut self, name: &str, sels: &[Sel], values: &[String]) -> Option<Option<Vec<String>>> {
        let Some(set) = self.rules.sets.get(name) else {
            self.warn(format!("set {name} is not in the table; treated as empty"));
            return None;
        };
        set.elements
            .iter()
            .find(|(k, _)| key_matches(sels, values, k))
            .map(|(_, v)| v.clone())
    }

    fn value(&mut self, sel: Sel, path: &Path, mask: Option<u32>, line: usize) -> String {
        match sel {
            Sel::Saddr => self.packet.src.to_string(),
            Sel::Daddr => path.dst.to_string(),
            Sel::L4proto => self.packet.proto.as_str().to_string(),
            Sel::Dport(proto) => {
                if proto.is_some_and(|p| p != self.packet.proto.as_str()) {
                    return String::new();
                }
                path.dport.to_string()
            }
            Sel::FibType(src) => {
                let ip = if src { self.packet.src } else { path.dst };
                if is_local(&self.opts.node_ips, ip) {
                    "local"
                } else {
                    "unicast"
                }
                .to_string()
            }
            Sel::Iifname => match &path.in_iface {
                Some(i) => i.clone(),
                None => {
                    self.warn(format!("line {line}: the packet's input interface is unknown (--in-iface); iifname rules do not match"));
                    String::from("\u{0}")
                }
            },
            Sel::CtState => "new".into(),
            Sel::Mark => (path.mark & mask.unwrap_or(u32::MAX)).to_string(),
        }
    }
}

/// What a match reads from the packet.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sel {
    Saddr,
    Daddr,
    L4proto,
    /// `th dport` (None) or `tcp dport` (also a protocol match).
    Dport(Option<&'static str>),
    /// `fib saddr type` (true) or `fib daddr type`.
    FibType(bool),
    Iifname,
    CtState,
    Mark,
}

/// A selector at the start of `w`, and how many words it took.
fn selector(w: &[&str]) -> Option<(Sel, usize)> {
    Some(match w {
        ["ip" | "ip6", "saddr", ..] => (Sel::Saddr, 2),
        ["ip" | "ip6", "daddr", ..] => (Sel::Daddr, 2),
        ["meta", "l4proto", ..] => (Sel::L4proto, 2),
        ["meta", "mark", ..] => (Sel::Mark, 2),
        ["mark", ..] => (Sel::Mark, 1),
        ["th", "dport", ..] => (Sel::Dport(None), 2),
        ["tcp", "dport", ..] => (Sel::Dport(Some("tcp")), 2),
        ["udp", "dport", ..] => (Sel::Dport(Some("udp")), 2),
        ["sctp", "dport", ..] => (Sel::Dport(Some("sctp")), 2),
        ["fib", "saddr", "type", ..] => (Sel::FibType(true), 3),
        ["fib", "daddr", "type", ..] => (Sel::FibType(false), 3),
        ["iifname", ..] | ["meta", "iifname", ..] => (Sel::Iifname, if w[0] == "meta" { 2 } else { 1 }),
        ["ct", "state", ..] => (Sel::CtState, 2),
        _ => return None,
    })
}

/// Whether an element key (or a literal) equals the packet's values, part by part.
fn key_matches(sels: &[Sel], values: &[String], key: &[String]) -> bool {
    key.len() == sels.len()
        && sels
            .iter()
            .zip(values)
            .zip(key)
            .all(|((sel, v), k)| part_matches(*sel, v, k))
}

fn part_matches(sel: Sel, value: &str, key: &str) -> bool {
    match sel {
        Sel::Saddr | Sel::Daddr => {
            let Ok(ip) = value.parse::<IpAddr>() else {
                return false;
            };
            if let Ok(net) = key.parse::<IpNet>() {
                return net.contains(&ip);
            }
            key.parse::<IpAddr>().is_ok_and(|k| k == ip)
        }
        Sel::L4proto => {
            let k = match key {
                "6" => "tcp",
                "17" => "udp",
                "132" => "sctp",
                k => k,
            };
            k.eq_ignore_ascii_case(value)
        }
        Sel::Dport(_) => key
            .parse::<u16>()
            .ok()
            .zip(value.parse::<u16>().ok())
            .is_some_and(|(a, b)| a == b),
        Sel::Mark => parse_u32(key).is_some_and(|k| value.parse::<u32>().is_ok_and(|v| v == k)),
        Sel::Iifname => match key.strip_suffix('*') {
            Some(prefix) => value.starts_with(prefix.trim_matches('"')),
            None => value == key.trim_matches('"'),
        },
        Sel::FibType(_) | Sel::CtState => value == key,
    }
}

fn verdict_action(v: &[String]) -> Option<Action> {
    Some(match v {
        [a] if a == "drop" => Action::Drop,
        [a] if a == "accept" => Action::Accept,
        [a] if a == "return" => Action::Return,
        [a, to] if a == "goto" => Action::Goto(to.clone()),
        [a, to] if a == "jump" => Action::Jump(to.clone()),
        _ => return None,
    })
}

/// The index after the `}` matching the `{` at `open`.
fn skip_braces(w: &[&str], open: usize) -> usize {
    let mut depth = 0;
    for (i, x) in w.iter().enumerate().skip(open) {
        match *x {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    w.len()
}

fn parse_u32(s: &str) -> Option<u32> {
    match s.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// `10.0.0.1:80`, `[fd00::1]:80`, or an address alone (the port stays).
fn parse_dnat(to: &str, dport: u16) -> Option<SocketAddr> {
    if let Ok(sa) = to.parse::<SocketAddr>() {
        return Some(sa);
    }
    to.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, dport))
}

fn is_local(node_ips: &[IpAddr], ip: IpAddr) -> bool {
    ip.is_loopback() || node_ips.contains(&ip)
}
