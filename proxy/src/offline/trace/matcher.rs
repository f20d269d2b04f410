//! One rule's matches against the packet as it is at that point of the walk.

use super::Proto;
use super::parse_rule::parse_value_mask;
use super::rules::{Match, MatchKind, Module, Opt, Rule};
use std::net::IpAddr;

/// What the matcher knows about the packet at this rule.
pub(crate) struct PacketView<'a> {
    pub(crate) src: IpAddr,
    pub(crate) dst: IpAddr,
    pub(crate) dport: u16,
    pub(crate) proto: Proto,
    /// None: the input interface is unknown (the caller did not say).
    pub(crate) in_iface: Option<&'a str>,
    pub(crate) mark: u32,
    /// The connection has been DNATed already (conntrack state DNAT).
    pub(crate) dnat_done: bool,
    /// Addresses that are LOCAL for addrtype (node IPs; loopback is always local).
    pub(crate) node_ips: &'a [IpAddr],
}

impl PacketView<'_> {
    pub(crate) fn is_local(&self, ip: IpAddr) -> bool {
        is_local(self.node_ips, ip)
    }
}

pub(crate) fn is_local(node_ips: &[IpAddr], ip: IpAddr) -> bool {
    ip.is_loopback() || node_ips.contains(&ip)
}

/// The result of matching one rule.
#[derive(Debug, Default)]
pub(crate) struct Eval {
    /// Probability that the rule matches: 0 or 1, or in between for `statistic random`.
    pub(crate) probability: f64,
    /// Things the tracer could not decide (the rule is then treated as not matching).
    pub(crate) warnings: Vec<String>,
    /// `-m recent --set --name LIST` lists this rule records the client in (session affinity),
    /// kept only when the rule matches.
    pub(crate) affinity_lists: Vec<String>,
}

/// Three-valued result of one match: deterministic, probabilistic or undecidable.
enum One {
    Yes,
    No,
    Chance(f64),
    Unknown(String),
}

fn yes_if(b: bool) -> One {
    if b { One::Yes } else { One::No }
}

/// Evaluates all matches of `rule` (they are ANDed).
pub(crate) fn eval(rule: &Rule, p: &PacketView<'_>) -> Eval {
    let mut probability = 1.0;
    let mut unknown = Vec::new();
    let mut notes = Vec::new();
    for m in &rule.matches {
        match eval_one(m, p, &mut notes) {
            One::Yes => {}
            // A definite mismatch decides the rule, whatever the undecidable parts say.
            One::No => return Eval::default(),
            One::Chance(q) => probability *= q,
            One::Unknown(why) => unknown.push(why),
        }
    }
    if !unknown.is_empty() {
        let warnings = unknown
            .into_iter()
            .map(|why| format!("line {}: {why}; rule treated as not matching", rule.line))
            .collect();
        return Eval {
            probability: 0.0,
            warnings,
            affinity_lists: Vec::new(),
        };
    }
    Eval {
        probability,
        warnings: Vec::new(),
        affinity_lists: notes,
    }
}

fn eval_one(m: &Match, p: &PacketView<'_>, notes: &mut Vec<String>) -> One {
    let result = match &m.kind {
        MatchKind::Protocol(name) => yes_if(match name.as_str() {
            "all" => true,
            other => other == p.proto.as_str(),
        }),
        MatchKind::Source(nets) => yes_if(nets.iter().any(|n| n.contains(&p.src))),
        MatchKind::Destination(nets) => yes_if(nets.iter().any(|n| n.contains(&p.dst))),
        MatchKind::InIface(pattern) => match p.in_iface {
            Some(iface) => yes_if(iface_matches(pattern, iface)),
            None => One::Unknown(format!(
                "-i {pattern} needs the packet's input interface, which was not given"
            )),
        },
        MatchKind::OutIface(pattern) => One::Unknown(format!(
            "-o {pattern} needs the output interface, which the tracer does not know"
        )),
        // The traced packet is the first of a connection, never a later fragment.
        MatchKind::Fragment => One::No,
        MatchKind::Family(f) => yes_if(match p.src {
            IpAddr::V4(_) => *f == 4,
            IpAddr::V6(_) => *f == 6,
        }),
        MatchKind::Module(module) => return eval_module(module, p, notes),
    };
    negate(result, m.negated)
}

fn negate(result: One, negated: bool) -> One {
    if !negated {
        return result;
    }
    match result {
        One::Yes => One::No,
        One::No => One::Yes,
        One::Chance(q) => One::Chance(1.0 - q),
        unknown @ One::Unknown(_) => unknown,
    }
}

/// `eth0` exactly, or `veth+` as a prefix.
fn iface_matches(pattern: &str, iface: &str) -> bool {
    match pattern.strip_suffix('+') {
        Some(prefix) => iface.starts_with(prefix),
        None => pattern == iface,
    }
}

fn eval_module(module: &Module, p: &PacketView<'_>, notes: &mut Vec<String>) -> One {
    let mut combined = One::Yes;
    let mut module_notes = Vec::new();
    for opt in &module.options {
        let one = negate(
            eval_option(&module.name, opt, module, p, &mut module_notes),
            opt.negated,
        );
        combined = match (combined, one) {
            (One::No, _) | (_, One::No) => One::No,
            (One::Unknown(w), _) | (_, One::Unknown(w)) => One::Unknown(w),
            (One::Chance(a), One::Chance(b)) => One::Chance(a * b),
            (One::Chance(a), One::Yes) | (One::Yes, One::Chance(a)) => One::Chance(a),
            (One::Yes, One::Yes) => One::Yes,
        };
    }
    if module.options.is_empty() && !matches!(module.name.as_str(), "tcp" | "udp" | "sctp" | "comment") {
        return One::Unknown(format!("-m {} without options", module.name));
    }
    // Protocol modules only match their own protocol (iptables insists on -p anyway).
    if matches!(module.name.as_str(), "tcp" | "udp" | "sctp") && module.name != p.proto.as_str() {
        return One::No;
    }
    if !matches!(combined, One::No | One::Unknown(_)) {
        notes.extend(module_notes);
    }
    combined
}

fn unsupported(module: &str, opt: &Opt) -> One {
    One::Unknown(format!("unsupported option -m {module} --{}", opt.name))
}

fn value(opt: &Opt) -> &str {
    opt.values.first().map(String::as_str).unwrap_or_default()
}

fn eval_option(name: &str, opt: &Opt, module: &Module, p: &PacketView<'_>, notes: &mut Vec<String>) -> One {
    match (name, opt.name.as_str()) {
        ("comment", "comment") => One::Yes,
        // Accounting only: the kernel counts the packet and the match always holds.
        ("nfacct", "nfacct-name") => One::Yes,
        ("tcp" | "udp" | "sctp", "dport" | "destination-port") => match port_in(value(opt), p.dport) {
            Some(b) => yes_if(b),
            None => One::Unknown(format!("bad port {:?}", value(opt))),
        },
        ("tcp" | "udp" | "sctp", "sport" | "source-port") => One::Unknown(
            "source port matches need the client's port, which the tracer does not know".to_string(),
        ),
        // The first packet of a TCP connection carries SYN only.
        ("tcp", "syn") => One::Yes,
        ("tcp", "tcp-flags") => tcp_flags(opt),
        ("multiport", "dports" | "destination-ports" | "ports") => multiport(opt, p),
        ("addrtype", "dst-type" | "src-type") => addrtype(opt, p),
        ("statistic", "mode") => match value(opt) {
            "random" => One::Yes,
            other => One::Unknown(format!("statistic --mode {other} is not modelled")),
        },
        ("statistic", "probability") => match value(opt).parse::<f64>() {
            Ok(q) if (0.0..=1.0).contains(&q) => One::Chance(q),
            _ => One::Unknown(format!("bad probability {:?}", value(opt))),
        },
        ("recent", "set") => {
            let list = module
                .options
                .iter()
                .find(|o| o.name == "name")
                .map(value)
                .unwrap_or("DEFAULT");
            notes.push(list.to_string());
            One::Yes
        }
        // Nothing is recorded for a client before its first connection.
        ("recent", "rcheck" | "update" | "remove") => One::No,
        ("recent", "name" | "seconds" | "reap" | "hitcount" | "rttl" | "mask" | "rsource" | "rdest") => {
            One::Yes
        }
        ("mark", "mark") => match parse_value_mask(value(opt)) {
            Ok((v, m)) => yes_if(p.mark & m == v),
            Err(e) => One::Unknown(e),
        },
        ("conntrack", "ctstate") | ("state", "state") => ct_state(opt, p),
        ("physdev", _) => One::Unknown("physdev (bridged traffic) is not modelled".to_string()),
        (
            "tcp" | "udp" | "sctp" | "comment" | "addrtype" | "statistic" | "recent" | "mark" | "conntrack"
            | "state" | "multiport",
            _,
        ) => unsupported(name, opt),
        _ => One::Unknown(format!("unsupported match -m {name}")),
    }
}

/// `--tcp-flags MASK SET` on the first packet of a connection, which carries SYN only.
fn tcp_flags(opt: &Opt) -> One {
    let (Some(mask), Some(set)) = (opt.values.first(), opt.values.get(1)) else {
        return One::Unknown("--tcp-flags needs a mask and a set".to_string());
    };
    let has = |list: &str, flag: &str| list.split(',').any(|f| f == flag || f == "ALL");
    let flags = ["SYN", "ACK", "FIN", "RST", "URG", "PSH"];
    yes_if(
        flags
            .iter()
            .all(|f| !has(mask, f) || (has(set, f) == (*f == "SYN"))),
    )
}

fn multiport(opt: &Opt, p: &PacketView<'_>) -> One {
    let list = value(opt);
    let mut any = false;
    for part in list.split(',') {
        match port_in(part, p.dport) {
            Some(true) => any = true,
            Some(false) => {}
            None => return One::Unknown(format!("bad port list {list:?}")),
        }
    }
    if !any && opt.name == "ports" {
        return One::Unknown("multiport --ports also checks the unknown source port".to_string());
    }
    yes_if(any)
}

fn addrtype(opt: &Opt, p: &PacketView<'_>) -> One {
    let ip = if opt.name == "dst-type" { p.dst } else { p.src };
    let mut any = false;
    for kind in value(opt).split(',') {
        match addr_type_is(kind, ip, p) {
            Some(b) => any |= b,
            None => return One::Unknown(format!("addrtype {kind} is not modelled")),
        }
    }
    yes_if(any)
}

/// `--ctstate`/`--state` of a NEW connection (DNAT once a DNAT rule has matched).
fn ct_state(opt: &Opt, p: &PacketView<'_>) -> One {
    let mut any = false;
    for state in value(opt).split(',') {
        any |= match state {
            "NEW" => true,
            "DNAT" => p.dnat_done,
            "INVALID" | "ESTABLISHED" | "RELATED" | "UNTRACKED" | "SNAT" => false,
            other => return One::Unknown(format!("conntrack state {other} is not modelled")),
        };
    }
    yes_if(any)
}

/// `80`, `1000:2000`, `:2000`, `1000:`. None when malformed.
fn port_in(spec: &str, port: u16) -> Option<bool> {
    match spec.split_once(':') {
        Some((lo, hi)) => {
            let lo = if lo.is_empty() { 0 } else { lo.parse().ok()? };
            let hi = if hi.is_empty() { u16::MAX } else { hi.parse().ok()? };
            Some(lo <= port && port <= hi)
        }
        None => Some(spec.parse::<u16>().ok()? == port),
    }
}

fn addr_type_is(kind: &str, ip: IpAddr, p: &PacketView<'_>) -> Option<bool> {
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    Some(match kind {
        "LOCAL" => p.is_local(ip),
        "MULTICAST" => ip.is_multicast(),
        "BROADCAST" => broadcast,
        "UNICAST" => !p.is_local(ip) && !ip.is_multicast() && !broadcast,
        _ => return None,
    })
}
