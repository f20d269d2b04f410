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

use super::op::{Op, declaration};
use super::{Chain, Element, Ruleset, ServiceObjects, Set};

/// (container, key parts).
type ElementKey = (&'static str, Vec<String>);
/// (verdict, comment).
type ElementValue = (Option<String>, Option<String>);

/// Every element the ruleset holds, with how many objects (base, service ports) add it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct ElementIndex(BTreeMap<ElementKey, BTreeMap<ElementValue, usize>>);

impl ElementIndex {
    fn of(ruleset: &Ruleset) -> ElementIndex {
        let mut index = ElementIndex::default();
        for e in all_elements(ruleset) {
            *index
                .0
                .entry((e.container, e.key.clone()))
                .or_default()
                .entry((e.value.clone(), e.comment.clone()))
                .or_default() += 1;
        }
        index
    }

    fn apply(&mut self, delta: &Delta) {
        for (key, changes) in delta {
            let values = self.0.entry(key.clone()).or_default();
            add_counts(values, changes);
            if values.is_empty() {
                self.0.remove(key);
            }
        }
    }
}

/// Contributor count changes per element.
type Delta = BTreeMap<ElementKey, BTreeMap<ElementValue, isize>>;

/// Applies count changes to one key's values; a value whose count reaches 0 goes.
fn add_counts(values: &mut BTreeMap<ElementValue, usize>, changes: &BTreeMap<ElementValue, isize>) {
    for (value, n) in changes {
        let next = values.get(value).copied().unwrap_or(0).saturating_add_signed(*n);
        if next == 0 {
            values.remove(value);
        } else {
            values.insert(value.clone(), next);
        }
    }
}

/// The element the kernel holds for a key: one value wins when contributors disagree (an invalid
/// state, e.g. two Services claiming one IP for a moment), deterministically the smallest.
fn effective(values: &BTreeMap<ElementValue, usize>) -> Option<&ElementValue> {
    values.iter().find(|(_, n)| **n > 0).map(|(v, _)| v)
}

fn all_elements(r: &Ruleset) -> impl Iterator<Item = &Element> {
    r.base
        .elements
        .iter()
        .chain(r.services.values().flat_map(|s| s.elements.iter()))
}

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
enum IndexChange {
    Replace(ElementIndex),
    Delta(Delta),
}

/// One transaction: its steps (none when nothing changed) and what the kernel holds once it succeeds.
#[derive(Debug)]
pub struct Transaction {
    pub ops: Vec<Op>,
    pub stats: Stats,
    next: Ruleset,
    index: IndexChange,
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

/// Everything, from whatever the kernel holds. `recreate` deletes the table first (in the same
/// transaction, so no packet sees it missing): the way out when an object exists with a definition
/// nft cannot change in place (a set's type, a chain's hook).
pub fn full(next: Ruleset, existing: &Existing, recreate: bool) -> Transaction {
    let mut t = Builder::default();
    t.ops.push(Op::AddTable);
    if recreate {
        t.ops.push(Op::DeleteTable);
        t.ops.push(Op::AddTable);
    }
    let chains = next.chains();
    let sets = next.sets();
    let wanted_chains: BTreeSet<&str> = chains.iter().map(|c| c.name.as_str()).collect();
    let wanted_sets: BTreeSet<&str> = sets.iter().map(|s| s.name.as_str()).collect();
    let (stale_chains, stale_sets): (Vec<&String>, Vec<&String>) = if recreate {
        (Vec::new(), Vec::new())
    } else {
        (
            existing
                .chains
                .iter()
                .filter(|c| !wanted_chains.contains(c.as_str()))
                .collect(),
            existing
                .sets
                .iter()
                .filter(|s| !wanted_sets.contains(s.as_str()))
                .collect(),
        )
    };
    // 1. Declarations: adding what exists changes nothing, so these may split anywhere.
    for c in &chains {
        t.ops.push(Op::AddChain(declaration(c)));
        t.step();
    }
    for s in &sets {
        t.ops.push(Op::AddSet((*s).clone()));
        t.step();
    }
    // 2. Each part's chains emptied (if the table has them) and refilled together: a chain is never
    //    seen empty. Endpoint chains come before the service chain that picks them.
    let parts = std::iter::once(Part::base(&next)).chain(next.services.values().map(|s| Part::service(s)));
    for part in parts {
        for c in part.chains.iter().rev() {
            if !recreate && existing.chains.contains(&c.name) {
                t.ops.push(Op::FlushChain(c.name.clone()));
            }
            add_rules(&mut t.ops, c, &mut t.stats);
        }
        t.step();
    }
    t.stats.chains_written = chains.len();
    // 3. Every set and map emptied and refilled at once (affinity sets excepted: their elements are
    //    live client state).
    for s in sets
        .iter()
        .filter(|s| !recreate && s.timeout.is_none() && existing.sets.contains(&s.name))
    {
        t.ops.push(Op::FlushSet {
            name: s.name.clone(),
            is_map: s.is_map,
        });
    }
    let index = ElementIndex::of(&next);
    for (key, values) in &index.0 {
        if let Some(v) = effective(values) {
            t.ops.push(Op::AddElement(element(key, v)));
            t.stats.elements_added += 1;
        }
    }
    t.step();
    // 4. What goes, once nothing refers to it: stale chains emptied first (they may jump to each
    //    other), then deleted, then stale sets.
    t.ops
        .extend(stale_chains.iter().map(|c| Op::FlushChain((*c).clone())));
    t.ops
        .extend(stale_chains.iter().map(|c| Op::DeleteChain((*c).clone())));
    for s in &stale_sets {
        t.ops.push(Op::FlushSet {
            name: (*s).clone(),
            is_map: false,
        });
    }
    for s in &stale_sets {
        t.ops.push(Op::DeleteSet {
            name: (*s).clone(),
            is_map: false,
        });
    }
    t.stats.chains_deleted = stale_chains.len();
    Transaction {
        // Deleting and recreating the table must be one batch: in between there are no rules.
        splits: if recreate { Vec::new() } else { t.splits },
        ops: t.ops,
        stats: t.stats,
        next,
        index: IndexChange::Replace(index),
    }
}

/// The steps of a full transaction and where a batch may end between them.
#[derive(Default)]
struct Builder {
    ops: Vec<Op>,
    splits: Vec<usize>,
    stats: Stats,
}

impl Builder {
    /// The kernel may commit what came so far on its own: no state in between breaks traffic.
    fn step(&mut self) {
        self.splits.push(self.ops.len());
    }
}

/// Only what changed since `prev` (which the kernel holds).
pub fn partial(prev: &Applied, next: Ruleset) -> Transaction {
    let mut stats = Stats::default();
    let mut delta = Delta::new();
    // Chains and sets of the changed parts, before and after.
    let mut old_chains: BTreeMap<&str, &Chain> = BTreeMap::new();
    let mut new_chains: BTreeMap<&str, &Chain> = BTreeMap::new();
    let mut old_sets: BTreeMap<&str, &Set> = BTreeMap::new();
    let mut new_sets: BTreeMap<&str, &Set> = BTreeMap::new();
    // Chains to rewrite even if unchanged: they use a set that is redefined.
    let mut force: BTreeSet<&str> = BTreeSet::new();

    let mut changed: Vec<(Option<Part<'_>>, Option<Part<'_>>)> = Vec::new();
    if prev.ruleset.base != next.base {
        changed.push((Some(Part::base(&prev.ruleset)), Some(Part::base(&next))));
    }
    let mut names: BTreeSet<_> = prev.ruleset.services.keys().collect();
    names.extend(next.services.keys());
    for name in names {
        let (a, b) = (prev.ruleset.services.get(name), next.services.get(name));
        if let (Some(a), Some(b)) = (a, b)
            && (Arc::ptr_eq(a, b) || a == b)
        {
            continue;
        }
        changed.push((a.map(|a| Part::service(a)), b.map(|b| Part::service(b))));
    }
    for (a, b) in &changed {
        for (part, sign) in [(a, -1isize), (b, 1)] {
            for e in part.iter().flat_map(|p| p.elements) {
                *delta
                    .entry((e.container, e.key.clone()))
                    .or_default()
                    .entry((e.value.clone(), e.comment.clone()))
                    .or_default() += sign;
            }
        }
        for c in a.iter().flat_map(|p| p.chains) {
            old_chains.insert(&c.name, c);
        }
        for c in b.iter().flat_map(|p| p.chains) {
            new_chains.insert(&c.name, c);
        }
        for s in a.iter().flat_map(|p| p.sets) {
            old_sets.insert(&s.name, s);
        }
        for s in b.iter().flat_map(|p| p.sets) {
            new_sets.insert(&s.name, s);
        }
        let redefined = b
            .iter()
            .flat_map(|p| p.sets)
            .any(|s| old_sets.get(s.name.as_str()).is_some_and(|old| *old != s));
        if redefined {
            force.extend(b.iter().flat_map(|p| p.chains).map(|c| c.name.as_str()));
        }
    }

    let mut ops = Vec::new();
    // New chains exist before anything jumps to them; changed and vanished ones are emptied first.
    for (name, c) in &new_chains {
        if !old_chains.contains_key(name) {
            ops.push(Op::AddChain(declaration(c)));
        }
    }
    let rewrite: Vec<&Chain> = new_chains
        .iter()
        .filter(|(name, c)| old_chains.get(*name) != Some(*c) || force.contains(*name))
        .map(|(_, c)| *c)
        .collect();
    for c in &rewrite {
        if old_chains.contains_key(c.name.as_str()) {
            ops.push(Op::FlushChain(c.name.clone()));
        }
    }
    let gone_chains: Vec<&str> = old_chains
        .keys()
        .filter(|n| !new_chains.contains_key(*n))
        .copied()
        .collect();
    ops.extend(gone_chains.iter().map(|c| Op::FlushChain(c.to_string())));
    // Elements leave before the chains their verdicts name.
    let mut adds = Vec::new();
    for (key, changes) in &delta {
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
    ops.extend(gone_chains.iter().map(|c| Op::DeleteChain(c.to_string())));
    stats.chains_deleted = gone_chains.len();
    for (name, s) in &old_sets {
        let keep = new_sets.get(name).is_some_and(|n| n == s);
        if !keep {
            ops.push(Op::DeleteSet {
                name: name.to_string(),
                is_map: s.is_map,
            });
        }
    }
    for (name, s) in &new_sets {
        if old_sets.get(name) != Some(s) {
            ops.push(Op::AddSet((*s).clone()));
        }
    }
    for c in &rewrite {
        add_rules(&mut ops, c, &mut stats);
    }
    stats.chains_written = rewrite.len();
    ops.extend(adds);
    Transaction {
        ops,
        stats,
        next,
        index: IndexChange::Delta(delta),
        splits: Vec::new(),
    }
}

/// The base or one service port's objects: the diff treats them alike.
#[derive(Clone, Copy)]
struct Part<'a> {
    chains: &'a [Chain],
    sets: &'a [Set],
    elements: &'a [Element],
}

impl<'a> Part<'a> {
    fn base(r: &'a Ruleset) -> Part<'a> {
        Part {
            chains: &r.base.chains,
            sets: &r.base.sets,
            elements: &r.base.elements,
        }
    }
    fn service(s: &'a ServiceObjects) -> Part<'a> {
        Part {
            chains: &s.chains,
            sets: &s.sets,
            elements: &s.elements,
        }
    }
}

fn add_rules(ops: &mut Vec<Op>, c: &Chain, stats: &mut Stats) {
    for r in &c.rules {
        ops.push(Op::AddRule {
            chain: c.name.clone(),
            rule: r.clone(),
        });
        stats.rules_written += 1;
    }
}

fn element(key: &ElementKey, value: &ElementValue) -> Element {
    Element {
        container: key.0,
        key: key.1.clone(),
        value: value.0.clone(),
        comment: value.1.clone(),
    }
}
