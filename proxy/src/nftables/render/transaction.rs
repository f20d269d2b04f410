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

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::applied::{After, Applied, IndexChange, NoLocal};
use super::base::Base;
use super::element_index::{Delta, add_counts, effective, element};
use super::op::{Op, declaration};
use super::service::Ctx;
use super::{Chain, Element, Inputs, PortInputs, ServiceObjects, Set, endpoints};
use crate::model::Family;

/// One transaction: its steps (none when nothing changed) and what the kernel holds once it succeeds.
#[derive(Debug)]
pub struct Transaction {
    pub ops: Vec<Op>,
    pub stats: Stats,
    pub(super) family: Family,
    /// Every set or map the steps may name, before and after (the netlink encoder needs their types).
    pub(super) sets: Vec<Set>,
    pub(super) after: After,
    /// Where the steps may be split into several batches committed in order (ascending op indices;
    /// empty: one batch). Every prefix ending at a split leaves a table that serves traffic: old or
    /// new rules per chain, never an emptied one.
    pub splits: Vec<usize>,
}

impl Transaction {
    /// The transaction as `nft -f` input (empty when nothing changed).
    pub fn text(&self) -> String {
        super::text::ops_text(self.family, &self.ops)
    }

    pub fn family(&self) -> Family {
        self.family
    }

    /// The sets and maps the steps may name (the table's before and after the transaction).
    pub fn sets(&self) -> &[Set] {
        &self.sets
    }

    /// Service ports without local endpoints once the transaction is applied.
    pub fn no_local(&self) -> NoLocal {
        self.after.no_local
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
        super::text::ops_text(self.family, std::slice::from_ref(op))
    }
}

impl Applied {
    /// The transaction succeeded: the kernel now holds its ruleset.
    pub fn commit(&mut self, tx: Transaction) {
        self.commit_after(tx.after);
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

/// Only what changed since `prev` (which the kernel holds). A port whose Service and endpoints are
/// the very same records, with the same node facts and settings, is skipped unseen; any other is
/// rendered before and after and compared.
pub fn partial(prev: &Applied, next: Inputs) -> Transaction {
    let base = super::base::base(&next.node, &next.cfg);
    let ports = changed_ports(prev, &next);
    let mut no_local = prev.no_local;
    for (a, b) in &ports {
        a.iter().for_each(|a| no_local.count(a, -1));
        b.iter().for_each(|b| no_local.count(b, 1));
    }
    let mut sets: Vec<Set> = prev.base.sets.iter().chain(&base.sets).cloned().collect();
    sets.extend(
        ports
            .iter()
            .flat_map(|(a, b)| a.iter().chain(b).flat_map(|p| p.sets.iter().cloned())),
    );
    let mut stats = Stats::default();
    let ch = Changed::between(&prev.base, &base, &ports);
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
        family: next.cfg.family,
        sets,
        after: After {
            inputs: next,
            base,
            index: IndexChange::Delta(delta),
            no_local,
        },
        splits: Vec::new(),
    }
}

/// Old and new objects of every service port whose objects differ (none: the port is absent).
type PortPairs = Vec<(Option<ServiceObjects>, Option<ServiceObjects>)>;

fn changed_ports(prev: &Applied, next: &Inputs) -> PortPairs {
    let old = prev.inputs.as_ref();
    let same_ctx = old.is_some_and(|o| o.node == next.node && o.cfg == next.cfg);
    let old_ctx = old.map(|o| Ctx::new(&o.node, &o.cfg));
    let new_ctx = Ctx::new(&next.node, &next.cfg);
    let mut out = Vec::new();
    // Both sides are in name order: walk them together.
    let mut a = old.map_or(&[][..], |o| o.ports()).iter().peekable();
    let mut b = next.ports().iter().peekable();
    loop {
        let order = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(x), Some(y)) => x.0.name.cmp(&y.0.name),
        };
        let (x, y) = match order {
            Ordering::Less => (a.next(), None),
            Ordering::Greater => (None, b.next()),
            Ordering::Equal => (a.next(), b.next()),
        };
        if let (true, Some(x), Some(y)) = (same_ctx, x, y)
            && same_records(x, y)
        {
            continue;
        }
        let x = x
            .zip(old_ctx.as_ref())
            .map(|((s, e), ctx)| ctx.render(s, endpoints(e)));
        let y = y.map(|(s, e)| new_ctx.render(s, endpoints(e)));
        if x != y {
            out.push((x, y));
        }
    }
    out
}

/// The very same Service and endpoint records: the port renders as before.
fn same_records(x: &PortInputs, y: &PortInputs) -> bool {
    let same_eps = match (&x.1, &y.1) {
        (None, None) => true,
        (Some(p), Some(q)) => Arc::ptr_eq(p, q),
        _ => false,
    };
    Arc::ptr_eq(&x.0, &y.0) && same_eps
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
    fn between(prev: &'a Base, next: &'a Base, ports: &'a PortPairs) -> Changed<'a> {
        let mut ch = Changed {
            delta: Delta::new(),
            old_chains: BTreeMap::new(),
            new_chains: BTreeMap::new(),
            old_sets: BTreeMap::new(),
            new_sets: BTreeMap::new(),
            force: BTreeSet::new(),
        };
        if prev != next {
            ch.add(Some(Part::base(prev)), Some(Part::base(next)));
        }
        for (a, b) in ports {
            ch.add(a.as_ref().map(Part::service), b.as_ref().map(Part::service));
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
    pub(super) sets: &'a [Set],
    pub(super) elements: &'a [Element],
}

impl<'a> Part<'a> {
    pub(super) fn base(b: &'a Base) -> Part<'a> {
        Part {
            chains: &b.chains,
            sets: &b.sets,
            elements: &b.elements,
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
