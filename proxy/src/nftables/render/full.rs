//! The full transaction (first sync, after a failure, hourly): everything declared and rewritten
//! from whatever the kernel holds, and the table's stale chains and sets removed. It is produced as a
//! stream of groups, each of which a batch may end after without breaking traffic, rendering one
//! service port at a time: a first load of 10k services never holds the whole ruleset or all its
//! steps at once (the writer sends a batch every few thousand steps).

use std::ops::Bound;

use super::applied::{After, IndexChange, NoLocal};
use super::base::{self, Base};
use super::element_index::{ElementIndex, ElementKey, effective, element};
use super::op::{Op, declaration};
use super::service::Ctx;
use super::transaction::{Existing, Part, Stats, Transaction, add_rules};
use super::{Inputs, Set, endpoints};

/// How a full transaction starts from the table the kernel holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Over the table's objects, streamed: each declared, emptied and refilled, the stale ones
    /// removed at the end.
    Over,
    /// One batch that first clears the table but for its hooked chains (every chain's rules
    /// flushed, every set and map and every other chain deleted), then declares everything anew:
    /// a table another layout wrote, or after two failed full syncs. The hooks stay registered, so
    /// no packet crosses the commit between an old hook and a new one.
    Cleared,
    /// One batch that deletes the table first: when the kernel refuses [`Start::Cleared`] (a kept
    /// chain whose hook was defined otherwise), or the table cannot be listed.
    Recreated,
}

/// Everything, from whatever the kernel holds, collected into one transaction (tests, benches, the
/// `nft -f` path); the daemon streams [`FullStream`] instead.
pub fn full(next: Inputs, existing: &Existing, start: Start) -> Transaction {
    let mut stream = FullStream::new(next, existing.clone(), start);
    let (mut ops, mut splits) = (Vec::new(), Vec::new());
    while let Some(group) = stream.next_group() {
        ops.extend(group);
        splits.push(ops.len());
    }
    // The end is not a place to cut.
    splits.pop();
    if stream.one_batch() {
        splits.clear();
    }
    let (stats, sets) = (stream.stats.clone(), stream.base.sets.clone());
    Transaction {
        ops,
        stats,
        family: stream.inputs.cfg.family,
        sets,
        after: stream.finish(),
        splits,
    }
}

impl super::Applied {
    /// A full transaction's stream was drained into the kernel.
    pub fn commit_full(&mut self, stream: FullStream) {
        self.commit_after(stream.finish());
    }
}

/// Elements per group when nothing is emptied first: small groups keep a first load's batches small.
const ELEMENT_GROUP: usize = 1000;

/// Where the stream is.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Table,
    Base,
    Port(usize),
    /// Elements after the last key written (none: from the first).
    Elements(Option<ElementKey>),
    Stale,
    Done,
}

/// A full transaction as groups of steps: the table and the base sets; the base chains; each
/// service port's sets and chains, emptied (if the table has them) and refilled together, endpoint
/// chains before the service chain that picks them, so a chain is never seen empty; every set and
/// map emptied and refilled at once (affinity sets excepted: their elements are live client state);
/// what is stale, once nothing refers to it.
#[derive(Debug)]
pub struct FullStream {
    inputs: Inputs,
    base: Base,
    start: Start,
    /// What [`Start::Cleared`] clears first.
    clear: Existing,
    /// What the kernel holds and has not been declared yet: stale at the end.
    stale: Existing,
    /// Sets the table has that get their elements replaced.
    to_flush: Vec<(String, bool)>,
    index: ElementIndex,
    no_local: NoLocal,
    phase: Phase,
    pub stats: Stats,
}

impl FullStream {
    /// `existing` is what the table holds (nothing for [`Start::Recreated`]).
    pub fn new(inputs: Inputs, existing: Existing, start: Start) -> FullStream {
        // After a table is cleared or deleted nothing but hooks exists: nothing to empty, nothing
        // stale.
        let (clear, stale) = match start {
            Start::Over => (Existing::default(), existing),
            Start::Cleared => (existing, Existing::default()),
            Start::Recreated => (Existing::default(), Existing::default()),
        };
        FullStream {
            base: base::base(&inputs.node, &inputs.cfg),
            inputs,
            start,
            clear,
            stale,
            to_flush: Vec::new(),
            index: ElementIndex::default(),
            no_local: NoLocal::default(),
            phase: Phase::Table,
            stats: Stats::default(),
        }
    }

    /// Clearing or recreating the table must be one batch: in between there are no rules.
    pub fn one_batch(&self) -> bool {
        self.start != Start::Over
    }

    pub fn family(&self) -> crate::model::Family {
        self.inputs.cfg.family
    }

    /// The sets element steps name (the netlink encoder needs their types).
    pub fn sets(&self) -> &[Set] {
        &self.base.sets
    }

    /// The next group of steps; none at the end.
    pub fn next_group(&mut self) -> Option<Vec<Op>> {
        let mut ops = Vec::new();
        match self.phase {
            Phase::Table => {
                ops.push(Op::AddTable);
                match self.start {
                    Start::Over => {}
                    Start::Cleared => self.clear(&mut ops),
                    Start::Recreated => ops.extend([Op::DeleteTable, Op::AddTable]),
                }
                self.phase = Phase::Base;
            }
            Phase::Base => {
                let base = std::mem::take(&mut self.base);
                self.part(&mut ops, Part::base(&base));
                self.base = base;
                self.phase = Phase::Port(0);
            }
            Phase::Port(i) => match self.inputs.ports().get(i) {
                Some((svc, eps)) => {
                    let ctx = Ctx::new(&self.inputs.node, &self.inputs.cfg);
                    let objects = ctx.render(svc, endpoints(eps));
                    self.no_local.count(&objects, 1);
                    self.part(&mut ops, Part::service(&objects));
                    self.phase = Phase::Port(i + 1);
                }
                None => return self.advance(Phase::Elements(None)),
            },
            Phase::Elements(ref after) => {
                let after = after.clone();
                self.phase = match self.elements(&mut ops, after) {
                    Some(last) => Phase::Elements(Some(last)),
                    None => Phase::Stale,
                };
            }
            Phase::Stale => {
                self.remove_stale(&mut ops);
                self.phase = Phase::Done;
            }
            Phase::Done => return None,
        }
        Some(ops)
    }

    fn advance(&mut self, phase: Phase) -> Option<Vec<Op>> {
        self.phase = phase;
        self.next_group()
    }

    /// What the kernel holds once every group is applied.
    pub(super) fn finish(self) -> After {
        After {
            inputs: self.inputs,
            base: self.base,
            index: IndexChange::Replace(self.index),
            no_local: self.no_local,
        }
    }

    /// One part's sets and chains declared, then its chains emptied (if the table has them) and
    /// refilled, endpoint chains first.
    fn part(&mut self, ops: &mut Vec<Op>, part: Part<'_>) {
        for s in part.sets {
            let existed = self.stale.sets.remove(&s.name);
            if existed && s.timeout.is_none() {
                self.to_flush.push((s.name.clone(), s.is_map));
            }
            ops.push(Op::AddSet(s.clone()));
        }
        for c in part.chains {
            ops.push(Op::AddChain(declaration(c)));
        }
        for c in part.chains.iter().rev() {
            if self.stale.chains.remove(&c.name) {
                ops.push(Op::FlushChain(c.name.clone()));
            }
            add_rules(ops, c, &mut self.stats);
            self.stats.chains_written += 1;
        }
        self.index.add(part.elements);
    }

    /// Elements after `after`: all of them in one group when sets are emptied first (an emptied
    /// map must be refilled in the same batch), else [`ELEMENT_GROUP`] at a time (adding is all a
    /// first load does, and it may be cut anywhere). Returns the last key when more may follow.
    fn elements(&mut self, ops: &mut Vec<Op>, after: Option<ElementKey>) -> Option<ElementKey> {
        let flushing = !self.to_flush.is_empty();
        for (name, is_map) in std::mem::take(&mut self.to_flush) {
            ops.push(Op::FlushSet { name, is_map });
        }
        let limit = if flushing { usize::MAX } else { ELEMENT_GROUP };
        let from = match &after {
            Some(k) => Bound::Excluded(k),
            None => Bound::Unbounded,
        };
        let mut last = None;
        for (key, values) in self.index.0.range((from, Bound::Unbounded)).take(limit) {
            if let Some(v) = effective(values) {
                ops.push(Op::AddElement(element(key, v)));
                self.stats.elements_added += 1;
            }
            last = Some(key);
        }
        let more = last.is_some_and(|k| {
            self.index
                .0
                .range((Bound::Excluded(k), Bound::Unbounded))
                .next()
                .is_some()
        });
        more.then(|| last.cloned()).flatten()
    }

    /// The table emptied but for the hooked chains the base declares again: rules first (nothing
    /// then refers to a set or another chain), then the sets and maps (a verdict map refers to
    /// chains), then the other chains.
    fn clear(&mut self, ops: &mut Vec<Op>) {
        let Existing { chains, sets } = std::mem::take(&mut self.clear);
        ops.extend(chains.iter().map(|c| Op::FlushChain(c.clone())));
        for name in sets {
            ops.push(Op::DeleteSet { name, is_map: false });
        }
        let hooked = |name: &str| {
            self.base
                .chains
                .iter()
                .any(|c| c.hook.is_some() && c.name == name)
        };
        for c in chains.into_iter().filter(|c| !hooked(c)) {
            ops.push(Op::DeleteChain(c));
            self.stats.chains_deleted += 1;
        }
    }

    /// Stale chains emptied first (they may jump to each other), then deleted, then stale sets.
    fn remove_stale(&mut self, ops: &mut Vec<Op>) {
        let Existing { chains, sets } = std::mem::take(&mut self.stale);
        ops.extend(chains.iter().map(|c| Op::FlushChain(c.clone())));
        ops.extend(chains.iter().map(|c| Op::DeleteChain(c.clone())));
        for name in &sets {
            ops.push(Op::FlushSet {
                name: name.clone(),
                is_map: false,
            });
        }
        for name in sets {
            ops.push(Op::DeleteSet { name, is_map: false });
        }
        self.stats.chains_deleted += chains.len();
    }
}
