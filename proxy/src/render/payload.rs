//! iptables-restore text: the full payload, the partial payload against the last sync's digests, and
//! the jump rules from built-in chains (ensured separately, like upstream, because a --noflush restore
//! cannot replace a single rule in a chain svcnet does not own).

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use super::naming::*;
use super::{Chain, Rendered, Table};
use crate::config::RenderConfig;

/// Content digest of every chain written by the last successful sync.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChainDigests(pub BTreeMap<(Table, String), u64>);

fn digest(chain: &Chain) -> u64 {
    let mut h = DefaultHasher::new();
    chain.rules.hash(&mut h);
    h.finish()
}

/// What a payload holds, for metrics and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PayloadStats {
    pub filter_rules: usize,
    pub nat_rules: usize,
    pub chains_written: usize,
    pub chains_deleted: usize,
}

/// A rule in a built-in chain that sends traffic into svcnet's chains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jump {
    pub table: &'static str,
    pub chain: &'static str,
    /// Arguments without `-A/-I <chain>`.
    pub rule: String,
}

/// Upstream's iptablesJumpChains (and the kubelet KUBE-FIREWALL jumps when that chain is rendered).
pub fn jumps(cfg: &RenderConfig) -> Vec<Jump> {
    let new = "-m conntrack --ctstate NEW ";
    let j = |table, chain, extra: &str, comment: &str, target: &str| Jump {
        table,
        chain,
        rule: format!("{extra}-m comment --comment \"{comment}\" -j {target}"),
    };
    let mut out = vec![
        j(
            "filter",
            "INPUT",
            new,
            "kubernetes externally-visible service portals",
            KUBE_EXTERNAL_SERVICES,
        ),
        j(
            "filter",
            "FORWARD",
            new,
            "kubernetes externally-visible service portals",
            KUBE_EXTERNAL_SERVICES,
        ),
        j(
            "filter",
            "INPUT",
            "",
            "kubernetes health check service ports",
            KUBE_NODEPORTS,
        ),
        j(
            "filter",
            "FORWARD",
            new,
            "kubernetes service portals",
            KUBE_SERVICES,
        ),
        j(
            "filter",
            "OUTPUT",
            new,
            "kubernetes service portals",
            KUBE_SERVICES,
        ),
        j(
            "filter",
            "FORWARD",
            "",
            "kubernetes forwarding rules",
            KUBE_FORWARD,
        ),
        j(
            "filter",
            "INPUT",
            new,
            "kubernetes load balancer firewall",
            KUBE_PROXY_FIREWALL,
        ),
        j(
            "filter",
            "OUTPUT",
            new,
            "kubernetes load balancer firewall",
            KUBE_PROXY_FIREWALL,
        ),
        j(
            "filter",
            "FORWARD",
            new,
            "kubernetes load balancer firewall",
            KUBE_PROXY_FIREWALL,
        ),
        j("nat", "OUTPUT", "", "kubernetes service portals", KUBE_SERVICES),
        j(
            "nat",
            "PREROUTING",
            "",
            "kubernetes service portals",
            KUBE_SERVICES,
        ),
        j(
            "nat",
            "POSTROUTING",
            "",
            "kubernetes postrouting rules",
            KUBE_POSTROUTING,
        ),
    ];
    if cfg.effective_localhost_nodeports() {
        for chain in ["INPUT", "OUTPUT"] {
            out.push(Jump {
                table: "filter",
                chain,
                rule: format!("-j {KUBE_FIREWALL}"),
            });
        }
    }
    out
}

/// Options for a full payload.
#[derive(Clone, Debug, Default)]
pub struct FullOptions {
    /// Also write the jump rules from built-in chains (for a fresh namespace, `render` and `trace`).
    pub jumps: bool,
    /// Declare KUBE-PROXY-CANARY in mangle, nat and filter.
    pub canaries: bool,
    /// Existing svcnet-owned nat chains (from iptables-save) that are no longer rendered: deleted.
    pub stale_nat: BTreeSet<String>,
}

impl Rendered {
    /// Digests of every chain, to remember after a successful restore.
    pub fn digests(&self) -> ChainDigests {
        let mut d = BTreeMap::new();
        for c in &self.filter {
            d.insert((Table::Filter, c.name.clone()), digest(c));
        }
        for c in &self.nat {
            d.insert((Table::Nat, c.name.clone()), digest(c));
        }
        ChainDigests(d)
    }

    /// The whole ruleset as one iptables-restore --noflush payload.
    pub fn payload(&self, opts: &FullOptions, cfg: &RenderConfig) -> (String, PayloadStats) {
        let mut s = String::with_capacity(64 * (self.nat.len() + self.filter.len() + 16));
        let mut stats = PayloadStats::default();
        let jumps = if opts.jumps { jumps(cfg) } else { Vec::new() };
        if opts.canaries {
            s.push_str("*mangle\n:KUBE-PROXY-CANARY - [0:0]\nCOMMIT\n");
        }
        for (table, chains) in [(Table::Filter, &self.filter), (Table::Nat, &self.nat)] {
            let _ = writeln!(s, "*{}", table.as_str());
            if opts.canaries {
                let _ = writeln!(s, ":{KUBE_PROXY_CANARY} - [0:0]");
            }
            let stale: Vec<&String> = if table == Table::Nat {
                opts.stale_nat.iter().collect()
            } else {
                vec![]
            };
            for c in chains.iter() {
                let _ = writeln!(s, ":{} - [0:0]", c.name);
            }
            for c in &stale {
                let _ = writeln!(s, ":{c} - [0:0]");
            }
            for j in jumps.iter().filter(|j| j.table == table.as_str()) {
                let _ = writeln!(s, "-A {} {}", j.chain, j.rule);
            }
            let mut n = 0;
            for c in chains.iter() {
                for r in &c.rules {
                    let _ = writeln!(s, "-A {} {r}", c.name);
                    n += 1;
                }
            }
            for c in &stale {
                let _ = writeln!(s, "-X {c}");
            }
            s.push_str("COMMIT\n");
            stats.chains_written += chains.len();
            stats.chains_deleted += stale.len();
            match table {
                Table::Filter => stats.filter_rules = n,
                Table::Nat => stats.nat_rules = n,
            }
        }
        (s, stats)
    }

    /// Only the chains that differ from `prev`, plus flush+delete of chains `prev` had and this does
    /// not. `None` when nothing changed (no restore call needed).
    pub fn partial_payload(&self, prev: &ChainDigests) -> Option<(String, PayloadStats)> {
        let mut s = String::new();
        let mut stats = PayloadStats::default();
        let now = self.digests();
        for (table, chains) in [(Table::Filter, &self.filter), (Table::Nat, &self.nat)] {
            let changed: Vec<&Chain> = chains
                .iter()
                .filter(|c| prev.0.get(&(table, c.name.clone())) != now.0.get(&(table, c.name.clone())))
                .collect();
            let gone: Vec<&String> = prev
                .0
                .keys()
                .filter(|(t, name)| *t == table && !now.0.contains_key(&(table, name.clone())))
                .map(|(_, name)| name)
                .collect();
            if changed.is_empty() && gone.is_empty() {
                continue;
            }
            let _ = writeln!(s, "*{}", table.as_str());
            for c in &changed {
                let _ = writeln!(s, ":{} - [0:0]", c.name);
            }
            for g in &gone {
                let _ = writeln!(s, ":{g} - [0:0]");
            }
            let mut n = 0;
            for c in &changed {
                for r in &c.rules {
                    let _ = writeln!(s, "-A {} {r}", c.name);
                    n += 1;
                }
            }
            for g in &gone {
                let _ = writeln!(s, "-X {g}");
            }
            s.push_str("COMMIT\n");
            stats.chains_written += changed.len();
            stats.chains_deleted += gone.len();
            match table {
                Table::Filter => stats.filter_rules = n,
                Table::Nat => stats.nat_rules = n,
            }
        }
        if s.is_empty() { None } else { Some((s, stats)) }
    }
}
