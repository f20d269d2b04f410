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

pub(super) fn digest(chain: &Chain) -> u64 {
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

/// The chains one sync writes and deletes, before they become text. `owned` holds each service port's
/// chains as a group (whole services travel together when a sync is batched).
#[derive(Default)]
pub(super) struct Changes<'a> {
    pub filter: Vec<&'a Chain>,
    pub filter_deletes: Vec<&'a str>,
    /// nat chains shared by all services (KUBE-SERVICES, KUBE-NODEPORTS, KUBE-DST-*, ...).
    pub nat_shared: Vec<&'a Chain>,
    pub nat_owned: Vec<Vec<&'a Chain>>,
    pub nat_deletes: Vec<&'a str>,
}

impl Changes<'_> {
    fn chains(&self) -> usize {
        self.filter.len() + self.nat_shared.len() + self.nat_owned.iter().map(Vec::len).sum::<usize>()
    }

    fn is_empty(&self) -> bool {
        self.chains() == 0 && self.filter_deletes.is_empty() && self.nat_deletes.is_empty()
    }
}

/// What one payload does to one table: chains to (re)write, chains to delete, jumps, canary.
struct TableWrite<'a> {
    table: Table,
    canary: bool,
    jumps: Vec<&'a Jump>,
    chains: Vec<&'a Chain>,
    deletes: Vec<&'a str>,
}

impl<'a> TableWrite<'a> {
    fn new(table: Table) -> TableWrite<'a> {
        TableWrite {
            table,
            canary: false,
            jumps: vec![],
            chains: vec![],
            deletes: vec![],
        }
    }

    fn is_empty(&self) -> bool {
        !self.canary && self.jumps.is_empty() && self.chains.is_empty() && self.deletes.is_empty()
    }

    /// Appends `*table ... COMMIT`; returns the number of rules written.
    fn write(&self, s: &mut String) -> usize {
        let _ = writeln!(s, "*{}", self.table.as_str());
        if self.canary {
            let _ = writeln!(s, ":{KUBE_PROXY_CANARY} - [0:0]");
        }
        // Declaring a chain flushes it: a deleted chain is declared first so `-X` finds it empty.
        for name in self
            .chains
            .iter()
            .map(|c| c.name.as_str())
            .chain(self.deletes.iter().copied())
        {
            let _ = writeln!(s, ":{name} - [0:0]");
        }
        for j in &self.jumps {
            let _ = writeln!(s, "-A {} {}", j.chain, j.rule);
        }
        let mut n = 0;
        for c in &self.chains {
            for r in &c.rules {
                let _ = writeln!(s, "-A {} {r}", c.name);
                n += 1;
            }
        }
        for name in &self.deletes {
            let _ = writeln!(s, "-X {name}");
        }
        s.push_str("COMMIT\n");
        n
    }
}

/// One or more iptables-restore payloads, applied in order.
///
/// Why several: iptables-nft-restore 1.8.x takes time quadratic in the chains declared in one call
/// (measured in a netns: 10k chains 1 s, 20k 3.6 s, 40k 11 s; docs/proxy-daemon.md), so a first sync of
/// 10k services would take minutes in one transaction. Past `max_chains`, each service's own chains
/// (KUBE-SVC/SVL/EXT/FW/SEP/EPG, which only jump among themselves and to KUBE-MARK-MASQ) are written
/// first in batches, a whole service per batch. Until the last payload rewrites KUBE-SERVICES and the
/// dispatch chains they are unreferenced, so a half-applied sync never sends traffic to a half-written
/// service; the last payload also holds the filter table, canaries, jumps and every deletion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Payloads {
    pub texts: Vec<String>,
    pub stats: PayloadStats,
}

impl Payloads {
    /// All payloads as one text (what a single call would restore; for `render` and tests).
    pub fn joined(&self) -> String {
        self.texts.concat()
    }

    pub fn len(&self) -> usize {
        self.texts.iter().map(String::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }
}

/// No batching: everything in one payload.
pub const UNBATCHED: usize = usize::MAX;

impl Rendered {
    /// Digests of every chain (the bench's way to diff two renders; the daemon diffs [`Rendered`]s).
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
        let p = self.full_payloads(opts, cfg, UNBATCHED);
        (p.joined(), p.stats)
    }

    /// The whole ruleset, in batches of about `max_chains` service chains (see [`Payloads`]).
    pub fn full_payloads(&self, opts: &FullOptions, cfg: &RenderConfig, max_chains: usize) -> Payloads {
        let jumps = if opts.jumps { jumps(cfg) } else { Vec::new() };
        let changes = Changes {
            filter: self.filter.iter().map(AsRef::as_ref).collect(),
            filter_deletes: vec![],
            nat_shared: self.shared_nat().iter().map(AsRef::as_ref).collect(),
            nat_owned: self
                .services
                .values()
                .map(|s| s.chains.iter().map(AsRef::as_ref).collect())
                .collect(),
            nat_deletes: opts.stale_nat.iter().map(String::as_str).collect(),
        };
        batch(changes, &jumps, opts.canaries, true, max_chains)
    }

    /// Only the chains that differ from `prev`, plus flush+delete of chains `prev` had and this does
    /// not. `None` when nothing changed (no restore call needed).
    pub fn partial_payload(&self, prev: &ChainDigests) -> Option<(String, PayloadStats)> {
        self.partial_payloads(prev, UNBATCHED)
            .map(|p| (p.joined(), p.stats))
    }

    /// [`Rendered::partial_payload`] in batches of about `max_chains` service chains.
    pub fn partial_payloads(&self, prev: &ChainDigests, max_chains: usize) -> Option<Payloads> {
        let changes = super::diff::since_digests(self, prev);
        (!changes.is_empty()).then(|| batch(changes, &[], false, false, max_chains))
    }

    /// What the daemon writes after a successful sync that left `prev` in the kernel: the same as
    /// [`Rendered::partial_payloads`] against `prev`'s digests, found by comparing the two renders
    /// (services whose rules were reused from the render cache are skipped by pointer).
    pub fn partial_payloads_since(&self, prev: &Rendered, max_chains: usize) -> Option<Payloads> {
        let changes = super::diff::since_render(self, prev);
        (!changes.is_empty()).then(|| batch(changes, &[], false, false, max_chains))
    }
}

/// Turns changes into payloads: one when small, else service batches and a final payload.
/// `full`: write both tables even when one has nothing to change (a full sync names every chain).
fn batch(changes: Changes<'_>, jumps: &[Jump], canaries: bool, full: bool, max_chains: usize) -> Payloads {
    let mut stats = PayloadStats {
        chains_written: changes.chains(),
        chains_deleted: changes.filter_deletes.len() + changes.nat_deletes.len(),
        ..Default::default()
    };
    let table = |table: Table| TableWrite {
        canary: canaries,
        jumps: jumps.iter().filter(|j| j.table == table.as_str()).collect(),
        ..TableWrite::new(table)
    };
    let mut filter = table(Table::Filter);
    filter.chains = changes.filter;
    filter.deletes = changes.filter_deletes;
    let mut nat = table(Table::Nat);
    nat.deletes = changes.nat_deletes;

    let mut texts = Vec::new();
    if stats.chains_written > max_chains {
        // KUBE-MARK-MASQ first: service chains jump to it.
        let mut current = TableWrite::new(Table::Nat);
        for c in changes.nat_shared {
            if c.name == KUBE_MARK_MASQ {
                current.chains.push(c);
            } else {
                nat.chains.push(c);
            }
        }
        for group in changes.nat_owned {
            if current.chains.len() >= max_chains {
                let mut s = String::new();
                stats.nat_rules += current.write(&mut s);
                texts.push(s);
                current = TableWrite::new(Table::Nat);
            }
            current.chains.extend(group);
        }
        if !current.chains.is_empty() {
            let mut s = String::new();
            stats.nat_rules += current.write(&mut s);
            texts.push(s);
        }
    } else {
        nat.chains = changes.nat_shared;
        nat.chains.extend(changes.nat_owned.into_iter().flatten());
    }

    let mut last = String::new();
    if canaries {
        last.push_str("*mangle\n:KUBE-PROXY-CANARY - [0:0]\nCOMMIT\n");
    }
    for w in [filter, nat] {
        // A full payload always names both tables; a partial one only those it changes.
        if w.is_empty() && !full {
            continue;
        }
        let n = w.write(&mut last);
        match w.table {
            Table::Filter => stats.filter_rules += n,
            Table::Nat => stats.nat_rules += n,
        }
    }
    if !last.is_empty() {
        texts.push(last);
    }
    Payloads { texts, stats }
}

#[cfg(test)]
mod tests;
