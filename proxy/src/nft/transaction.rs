//! The `nft -f` transaction that takes the kernel from what it holds to the next [`Ruleset`].
//!
//! A full transaction (first sync, after a failure, hourly) declares everything, empties what it
//! declares (affinity sets excepted: their elements are live client state) and removes the table's
//! chains and sets the ruleset no longer has. A partial one writes only what changed since the last
//! successful transaction: the changed service ports' chains, rules and sets, and the changed map and
//! set elements. Each is one nft transaction, so the kernel switches atomically or not at all.
//!
//! Several service ports may add the same element (the cluster IP of a multi-port Service is in
//! `cluster-ips` once per port), so elements are kept with a contributor count ([`ElementIndex`]) and
//! leave the kernel only with their last contributor.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::element_index::{Delta, ElementIndex, add_counts, effective, element};
use super::op::{Op, declaration};
use super::{Chain, Element, Ruleset, ServiceObjects, Set};

pub use super::full::full;

/// What the kernel holds after the last successful transaction.
#[derive(Clone, Debug, Default)]
pub struct Applied {
    ruleset: Ruleset,
    index: ElementIndex,
}

impl Applied {
    pub fn ruleset(&self) -> &Ruleset {
        &self.ruleset
    }

    /// The transaction succeeded: the kernel now holds its ruleset.
    pub fn commit(&mut self, tx: Transaction) {
        match tx.index {
            IndexChange::Replace(index) => self.index = index,
            IndexChange::Delta(delta) => self.index.apply(&delta),
        }
        self.ruleset = tx.next;
    }
}

#[derive(Debug)]
pub(super) enum IndexChange {
    Replace(ElementIndex),
    Delta(Delta),
}

/// One transaction: its steps (none when nothing changed) and what the kernel holds once it succeeds.
#[derive(Debug)]
pub struct Transaction {
    pub ops: Vec<Op>,
    pub stats: Stats,
    pub(super) next: Ruleset,
    pub(super) index: IndexChange,
    /// Where the steps may be split into several batches committed in order (ascending op indices;
    /// empty: one batch). Every prefix ending at a split leaves a table that serves traffic: old or
    /// new rules per chain, never an emptied one.
    pub splits: Vec<usize>,
}

impl Transaction {
    /// The transaction as `nft -f` input (empty when nothing changed).
    pub fn text(&self) -> String {
        super::text::ops_text(self.next.family, &self.ops)
    }

    pub fn family(&self) -> crate::model::Family {
        self.next.family
    }

    /// The sets and maps of the table once the transaction is applied.
    pub fn sets(&self) -> Vec<&Set> {
        self.next.sets()
    }

    /// The steps as batches to commit in order: one, or (a full sync) as few as keep each under
    /// `limit` steps, cut only at [`Transaction::splits`] (a group larger than `limit` stays whole).
    pub fn batches(&self, limit: usize) -> Vec<&[Op]> {
        let mut out = Vec::new();
        let (mut start, mut last_split) = (0, 0);
        for &split in &self.splits {
            if split - start > limit && last_split > start {
                out.push(&self.ops[start..last_split]);
                start = last_split;
            }
            last_split = split;
        }
        if start < self.ops.len() {
            out.push(&self.ops[start..]);
        }
        out
    }

    /// One step as its `nft -f` line (for error messages).
    pub fn op_text(&self, op: &Op) -> String {
        super::text::ops_text(self.next.family, std::slice::from_ref(op))
    }
}

/// What a transaction writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub chains_written: usize,
    pub chains_deleted: usize,
    pub rules_written: usize,
    pub elements_added: usize,
    pub elements_deleted: usize,
}

/// The chain and set names the kernel's table has now (from a listing, read before a full sync).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Existing {
    pub chains: BTreeSet<String>,
    pub sets: BTreeSet<String>,
}

/// Only what changed since `prev` (which the kernel holds).
pub fn partial(prev: &Applied, next: Ruleset) -> Transaction {
    let mut stats = Stats::default();
    let ch = Changed::between(&prev.ruleset, &next);
    let mut ops = Vec::new();
    // New chains exist before anything jumps to them; changed and vanished ones are emptied first.
    for (name, c) in &ch.new_chains {
        if !ch.old_chains.contains_key(name) {
            ops.push(Op::AddChain(declaration(c)));
        }
    }
    let rewrite: Vec<&Chain> = ch
        .new_chains
        .iter()
        .filter(|(name, c)| ch.old_chains.get(*name) != Some(*c) || ch.force.contains(*name))
        .map(|(_, c)| *c)
        .collect();
    for c in &rewrite {
        if ch.old_chains.contains_key(c.name.as_str()) {
            ops.push(Op::FlushChain(c.name.clone()));
        }
    }
    let gone_chains: Vec<&str> = ch
        .old_chains
        .keys()
        .filter(|n| !ch.new_chains.contains_key(*n))
        .copied()
        .collect();
    ops.extend(gone_chains.iter().map(|c| Op::FlushChain(c.to_string())));
    // Elements leave before the chains their verdicts name.
    let adds = element_ops(prev, &ch.delta, &mut ops, &mut stats);
    ops.extend(gone_chains.iter().map(|c| Op::DeleteChain(c.to_string())));
    stats.chains_deleted = gone_chains.len();
    for (name, s) in &ch.old_sets {
        let keep = ch.new_sets.get(name).is_some_and(|n| n == s);
        if !keep {
            ops.push(Op::DeleteSet {
                name: name.to_string(),
                is_map: s.is_map,
            });
        }
    }
    for (name, s) in &ch.new_sets {
        if ch.old_sets.get(name) != Some(s) {
            ops.push(Op::AddSet((*s).clone()));
        }
    }
    for c in &rewrite {
        add_rules(&mut ops, c, &mut stats);
    }
    stats.chains_written = rewrite.len();
    ops.extend(adds);
    let delta = ch.delta;
    Transaction {
        ops,
        stats,
        next,
        index: IndexChange::Delta(delta),
        splits: Vec::new(),
    }
}

/// Element changes against what the kernel holds: deletions go into `ops` now, additions are
/// returned (they go last, once the chains they name exist).
fn element_ops(prev: &Applied, delta: &Delta, ops: &mut Vec<Op>, stats: &mut Stats) -> Vec<Op> {
    let mut adds = Vec::new();
    for (key, changes) in delta {
        let before_values = prev.index.0.get(key);
        let before = before_values.and_then(effective);
        let mut after_values = before_values.cloned().unwrap_or_default();
        add_counts(&mut after_values, changes);
        let after = effective(&after_values);
        if before == after {
            continue;
        }
        if let Some(v) = before {
            ops.push(Op::DeleteElement(element(key, v)));
            stats.elements_deleted += 1;
        }
        if let Some(v) = after {
            adds.push(Op::AddElement(element(key, v)));
            stats.elements_added += 1;
        }
    }
    adds
}

/// The parts (base, service ports) that differ between two rulesets: their chains and sets before
/// and after, and the element count changes.
struct Changed<'a> {
    delta: Delta,
    old_chains: BTreeMap<&'a str, &'a Chain>,
    new_chains: BTreeMap<&'a str, &'a Chain>,
    old_sets: BTreeMap<&'a str, &'a Set>,
    new_sets: BTreeMap<&'a str, &'a Set>,
    /// Chains to rewrite even if unchanged: they use a set that is redefined.
    force: BTreeSet<&'a str>,
}

impl<'a> Changed<'a> {
    fn between(prev: &'a Ruleset, next: &'a Ruleset) -> Changed<'a> {
        let mut ch = Changed {
            delta: Delta::new(),
            old_chains: BTreeMap::new(),
            new_chains: BTreeMap::new(),
            old_sets: BTreeMap::new(),
            new_sets: BTreeMap::new(),
            force: BTreeSet::new(),
        };
        let mut changed: Vec<(Option<Part<'_>>, Option<Part<'_>>)> = Vec::new();
        if prev.base != next.base {
            changed.push((Some(Part::base(prev)), Some(Part::base(next))));
        }
        let mut names: BTreeSet<_> = prev.services.keys().collect();
        names.extend(next.services.keys());
        for name in names {
            let (a, b) = (prev.services.get(name), next.services.get(name));
            if let (Some(a), Some(b)) = (a, b)
                && (Arc::ptr_eq(a, b) || a == b)
            {
                continue;
            }
            changed.push((a.map(|a| Part::service(a)), b.map(|b| Part::service(b))));
        }
        for (a, b) in changed {
            ch.add(a, b);
        }
        ch
    }

    fn add(&mut self, a: Option<Part<'a>>, b: Option<Part<'a>>) {
        for (part, sign) in [(&a, -1isize), (&b, 1)] {
            for e in part.iter().flat_map(|p| p.elements) {
                *self
                    .delta
                    .entry((e.container, e.key.clone()))
                    .or_default()
                    .entry((e.value.clone(), e.comment.clone()))
                    .or_default() += sign;
            }
        }
        for c in a.iter().flat_map(|p| p.chains) {
            self.old_chains.insert(&c.name, c);
        }
        for c in b.iter().flat_map(|p| p.chains) {
            self.new_chains.insert(&c.name, c);
        }
        for s in a.iter().flat_map(|p| p.sets) {
            self.old_sets.insert(&s.name, s);
        }
        for s in b.iter().flat_map(|p| p.sets) {
            self.new_sets.insert(&s.name, s);
        }
        let redefined = b
            .iter()
            .flat_map(|p| p.sets)
            .any(|s| self.old_sets.get(s.name.as_str()).is_some_and(|old| *old != s));
        if redefined {
            self.force
                .extend(b.iter().flat_map(|p| p.chains).map(|c| c.name.as_str()));
        }
    }
}

/// The base or one service port's objects: the diff treats them alike.
#[derive(Clone, Copy)]
pub(super) struct Part<'a> {
    pub(super) chains: &'a [Chain],
    sets: &'a [Set],
    elements: &'a [Element],
}

impl<'a> Part<'a> {
    pub(super) fn base(r: &'a Ruleset) -> Part<'a> {
        Part {
            chains: &r.base.chains,
            sets: &r.base.sets,
            elements: &r.base.elements,
        }
    }
    pub(super) fn service(s: &'a ServiceObjects) -> Part<'a> {
        Part {
            chains: &s.chains,
            sets: &s.sets,
            elements: &s.elements,
        }
    }
}

pub(super) fn add_rules(ops: &mut Vec<Op>, c: &Chain, stats: &mut Stats) {
    for r in &c.rules {
        ops.push(Op::AddRule {
            chain: c.name.clone(),
            rule: r.clone(),
        });
        stats.rules_written += 1;
    }
}
