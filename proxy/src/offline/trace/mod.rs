//! Packet tracer over iptables-save / iptables-restore text.
//!
//! Answers "why does my packet reach that pod?": [`parse`] a saved ruleset, then [`trace`] one
//! NEW connection through it the way the kernel would, forking at `statistic random` rules.
//! Pure: no I/O. Understands what kube-proxy's iptables mode (and svcnet's dispatch buckets,
//! which are ordinary user chains) emits; anything it cannot decide becomes a warning and the
//! rule is treated as not matching.

mod jumps;
mod lex;
mod matcher;
pub mod nft;
mod parse;
mod parse_rule;
mod path;
mod report;
mod rules;
mod walk;

#[cfg(test)]
mod tests;

pub use parse::{ParseError, parse};
pub use rules::Ruleset;

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

/// Transport protocol of the traced packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    Tcp,
    Udp,
    Sctp,
}

impl Proto {
    /// Lower-case name as iptables writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
            Proto::Sctp => "sctp",
        }
    }
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A protocol name that is not tcp, udp or sctp.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol {0:?} (expected tcp, udp or sctp)")]
pub struct UnknownProto(pub String);

impl FromStr for Proto {
    type Err = UnknownProto;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "tcp" => Ok(Proto::Tcp),
            "udp" => Ok(Proto::Udp),
            "sctp" => Ok(Proto::Sctp),
            _ => Err(UnknownProto(s.to_string())),
        }
    }
}

/// Where the packet enters netfilter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Hook {
    /// Arriving on the node (from a pod, another node, a load balancer or the outside):
    /// nat PREROUTING, routing, then filter INPUT (local destination) or filter FORWARD + nat
    /// POSTROUTING.
    #[default]
    Prerouting,
    /// Generated on the node: nat OUTPUT, filter OUTPUT, nat POSTROUTING (then filter INPUT
    /// over `lo` when the destination is local).
    Output,
}

/// The first packet of a new connection.
#[derive(Clone, Debug)]
pub struct Packet {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dport: u16,
    pub proto: Proto,
    /// Interface the packet arrives on (Prerouting); None = unknown, `-i` rules then warn.
    pub in_iface: Option<String>,
}

/// What the tracer needs to know about the node.
#[derive(Clone, Debug, Default)]
pub struct TraceOptions {
    /// The node's own addresses (addrtype LOCAL; loopback is always local).
    pub node_ips: Vec<IpAddr>,
    pub hook: Hook,
}

/// How one path through the rules ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    /// Destination rewritten to this endpoint and the packet let through.
    Dnat(SocketAddr),
    Reject,
    Drop,
    /// Reached its destination unchanged.
    Accept,
}

/// One matched rule on a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub table: String,
    pub chain: String,
    /// The rule text as in the input.
    pub rule: String,
    /// 1-based line number in the input.
    pub line: usize,
}

/// One possible fate of the packet and how likely it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub probability: f64,
    pub verdict: Verdict,
    /// Source address rewritten (MASQUERADE/SNAT) on the way out.
    pub masquerade: bool,
    /// Every matched rule, in order.
    pub steps: Vec<Step>,
    /// Facts worth telling (session affinity, policies that decided the verdict).
    pub notes: Vec<String>,
}

/// The result of tracing one packet: outcomes whose probabilities sum to 1.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    pub outcomes: Vec<Outcome>,
    /// Things the tracer could not decide, with line numbers (rules treated as not matching).
    pub warnings: Vec<String>,
}

/// Walks `packet` through `rules` as the kernel would for a NEW connection.
pub fn trace(rules: &Ruleset, packet: &Packet, opts: &TraceOptions) -> Trace {
    walk::Walker::new(rules, packet, opts).run()
}

/// Chains kube-proxy uses for plumbing rather than for a particular service.
const INFRA_CHAINS: &[&str] = &[
    "KUBE-POSTROUTING",
    "KUBE-FORWARD",
    "KUBE-FIREWALL",
    "KUBE-MARK-MASQ",
    "KUBE-MARK-DROP",
    "KUBE-PROXY-CANARY",
    "KUBE-KUBELET-CANARY",
    "KUBE-IPTABLES-HINT",
];

/// Prefixes of per-service chains.
const SERVICE_CHAIN_PREFIXES: &[&str] = &[
    "KUBE-SVC-",
    "KUBE-SVL-",
    "KUBE-EXT-",
    "KUBE-FW-",
    "KUBE-SEP-",
    "KUBE-XLB-",
    // svcnet's endpoint-tree groups (tree layout, large services).
    "KUBE-EPG-",
];

impl Step {
    /// Whether this matched rule is about a particular service: a rule in a per-service chain,
    /// a jump into one (or to KUBE-MARK-MASQ/DROP), or a verdict in a KUBE- dispatch chain.
    /// Plumbing (KUBE-POSTROUTING's RETURN, the jump to KUBE-NODEPORTS, svcnet's dispatch
    /// buckets) does not count.
    pub fn is_service_rule(&self) -> bool {
        if self.table.ends_with(" kube-proxy") {
            return nft_service_rule(&self.chain, &self.rule);
        }
        if !self.chain.starts_with("KUBE-") || INFRA_CHAINS.contains(&self.chain.as_str()) {
            return false;
        }
        if SERVICE_CHAIN_PREFIXES.iter().any(|p| self.chain.starts_with(p)) {
            return true;
        }
        match jump_target(&self.rule) {
            Some(target) if target.starts_with("KUBE-") => {
                SERVICE_CHAIN_PREFIXES.iter().any(|p| target.starts_with(p))
                    || target == "KUBE-MARK-MASQ"
                    || target == "KUBE-MARK-DROP"
            }
            // DNAT, REJECT, DROP, ACCEPT, MARK... in a KUBE- chain.
            Some(_) => true,
            None => false,
        }
    }
}

/// The nftables mode's plumbing chains (upstream's names, which the maps layout keeps): the hooks, the
/// dispatch and the checks. `service-endpoints-check` is one, although it shares the `service-` prefix.
const NFT_INFRA_CHAINS: &[&str] = &[
    "filter-prerouting",
    "filter-prerouting-pre-dnat",
    "filter-output-pre-dnat",
    "filter-input",
    "filter-forward",
    "filter-output",
    "filter-output-post-dnat",
    "nat-prerouting",
    "nat-output",
    "nat-postrouting",
    "services",
    "nodeports",
    "service-endpoints-check",
    "nodeport-endpoints-check",
    "reject-chain",
    "cluster-ips-check",
    "firewall-check",
    "mark-for-masquerade",
    "masquerading",
];

/// Prefixes of upstream's per-service chains in the nftables mode.
const NFT_SERVICE_CHAIN_PREFIXES: &[&str] = &["service-", "local-", "external-", "endpoint-", "firewall-"];

/// An nftables rule is about a particular service when it sits in a per-service chain, or when it
/// decides the packet (DNAT, reject, drop, a mark) or looks the packet up in a named set or map
/// (upstream's vmaps, every rule of the maps layout), unless all it does is jump to plumbing.
fn nft_service_rule(chain: &str, rule: &str) -> bool {
    if matches!(chain, "masquerading" | "mark-for-masquerade") {
        return false;
    }
    if !NFT_INFRA_CHAINS.contains(&chain) && NFT_SERVICE_CHAIN_PREFIXES.iter().any(|p| chain.starts_with(p)) {
        return true;
    }
    let words: Vec<&str> = rule.split_whitespace().collect();
    if let Some(i) = words.iter().position(|w| matches!(*w, "jump" | "goto")) {
        let target = words.get(i + 1).copied().unwrap_or("");
        if NFT_INFRA_CHAINS.contains(&target) {
            return false;
        }
        return true;
    }
    words
        .iter()
        .any(|w| w.starts_with('@') || matches!(*w, "dnat" | "reject" | "drop" | "vmap"))
        || rule.contains("meta mark set")
}

/// The word after `-j`/`-g` in a rule text.
fn jump_target(rule: &str) -> Option<&str> {
    let mut words = rule.split_whitespace();
    while let Some(w) = words.next() {
        if matches!(w, "-j" | "--jump" | "-g" | "--goto") {
            return words.next();
        }
    }
    None
}

impl Trace {
    /// True when no KUBE- service rule matched on any path: the packet is not service traffic
    /// as far as these rules are concerned.
    pub fn no_service_rule(&self) -> bool {
        !self
            .outcomes
            .iter()
            .any(|o| o.steps.iter().any(Step::is_service_rule))
    }

    /// Verdict + masquerade with summed probabilities, sorted: what two layouts of the same
    /// services must agree on (paths differ, e.g. flat vs dispatch tree).
    pub fn summary(&self) -> Vec<(Verdict, bool, f64)> {
        let mut merged: Vec<(Verdict, bool, f64)> = Vec::new();
        for o in &self.outcomes {
            match merged
                .iter_mut()
                .find(|(v, m, _)| *v == o.verdict && *m == o.masquerade)
            {
                Some(entry) => entry.2 += o.probability,
                None => merged.push((o.verdict, o.masquerade, o.probability)),
            }
        }
        merged.sort_by_key(|entry| (entry.0, entry.1));
        merged
    }

    /// Whether two traces have the same verdicts with the same probabilities (within `eps`).
    pub fn same_outcomes(&self, other: &Trace, eps: f64) -> bool {
        let (a, b) = (self.summary(), other.summary());
        a.len() == b.len()
            && a.iter()
                .zip(&b)
                .all(|(x, y)| x.0 == y.0 && x.1 == y.1 && (x.2 - y.2).abs() <= eps)
    }

    /// Total probability of outcomes with this verdict.
    pub fn probability_of(&self, verdict: Verdict) -> f64 {
        self.outcomes
            .iter()
            .filter(|o| o.verdict == verdict)
            .map(|o| o.probability)
            .sum()
    }
}
