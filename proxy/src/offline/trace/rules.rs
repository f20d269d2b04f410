//! The parsed ruleset: tables -> chains -> rules, each rule with its matches and target.

use ipnet::IpNet;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// A parsed iptables ruleset (one address family, any number of tables).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ruleset {
    pub(crate) tables: BTreeMap<String, Table>,
}

impl Ruleset {
    /// Table names present, sorted.
    pub fn tables(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(String::as_str)
    }

    /// Chain names of `table`, sorted.
    pub fn chains(&self, table: &str) -> impl Iterator<Item = &str> {
        self.tables
            .get(table)
            .into_iter()
            .flat_map(|t| t.chains.keys().map(String::as_str))
    }

    /// The rule texts of one chain, in order (empty when the chain does not exist).
    pub fn rules(&self, table: &str, chain: &str) -> Vec<&str> {
        self.chain(table, chain)
            .map(|c| c.rules.iter().map(|r| r.text.as_str()).collect())
            .unwrap_or_default()
    }

    /// Number of rules in all chains of `table`.
    pub fn rule_count(&self, table: &str) -> usize {
        self.tables
            .get(table)
            .map(|t| t.chains.values().map(|c| c.rules.len()).sum())
            .unwrap_or(0)
    }

    pub(crate) fn chain(&self, table: &str, chain: &str) -> Option<&Chain> {
        self.tables.get(table)?.chains.get(chain)
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Table {
    pub(crate) chains: BTreeMap<String, Chain>,
}

/// Policy of a built-in chain (user chains have none and return to their caller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    Accept,
    Drop,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Chain {
    pub(crate) policy: Option<Policy>,
    pub(crate) rules: Vec<Rule>,
}

/// Built-in chain names (any table); user chains cannot use these names.
pub(crate) fn is_builtin_chain(name: &str) -> bool {
    matches!(
        name,
        "PREROUTING" | "INPUT" | "FORWARD" | "OUTPUT" | "POSTROUTING"
    )
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rule {
    /// The line as written in the input (trimmed).
    pub(crate) text: String,
    /// 1-based line number in the input.
    pub(crate) line: usize,
    /// The rule's arguments after the chain name, for `-D CHAIN rule-spec` lookups.
    pub(crate) spec: Vec<String>,
    pub(crate) matches: Vec<Match>,
    pub(crate) target: Target,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Match {
    pub(crate) negated: bool,
    pub(crate) kind: MatchKind,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum MatchKind {
    /// `-p`: lower-case name (`tcp`, `udp`, `sctp`, `icmp`, `all`, or a number iptables does not name).
    Protocol(String),
    Source(Vec<IpNet>),
    Destination(Vec<IpNet>),
    InIface(String),
    OutIface(String),
    /// `-f`: second and later fragments.
    Fragment,
    /// `-4` / `-6`: the rule only applies to that family (iptables-restore shared payloads).
    Family(u8),
    /// `-m NAME --opt value ...`, interpreted by the matcher.
    Module(Module),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Module {
    pub(crate) name: String,
    pub(crate) options: Vec<Opt>,
}

/// One `[!] --name value...` option of a match module or target.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Opt {
    pub(crate) negated: bool,
    pub(crate) name: String,
    pub(crate) values: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Target {
    /// No `-j`: the rule only counts packets; traversal continues.
    None,
    Jump(String),
    Goto(String),
    Accept,
    Drop,
    Reject,
    Return,
    Dnat(DnatTo),
    Snat,
    Masquerade,
    Mark(MarkOp),
    /// A non-terminating target the tracer does not model (LOG, CT, ...): traversal continues.
    Other(String),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DnatTo {
    pub(crate) addr: IpAddr,
    /// None keeps the packet's destination port.
    pub(crate) port: Option<u16>,
    /// The input gave an address or port range; the tracer follows its first element.
    pub(crate) ranged: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MarkOp {
    Or(u32),
    Xor(u32),
    And(u32),
    /// `--set-xmark value/mask`: mark = (mark & !mask) ^ value.
    SetXmark {
        value: u32,
        mask: u32,
    },
    /// `--set-mark value/mask`: mark = (mark & !mask) | value.
    SetMark {
        value: u32,
        mask: u32,
    },
}

impl MarkOp {
    pub(crate) fn apply(self, mark: u32) -> u32 {
        match self {
            MarkOp::Or(v) => mark | v,
            MarkOp::Xor(v) => mark ^ v,
            MarkOp::And(v) => mark & v,
            MarkOp::SetXmark { value, mask } => (mark & !mask) ^ value,
            MarkOp::SetMark { value, mask } => (mark & !mask) | value,
        }
    }
}
