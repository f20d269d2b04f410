//! The full transaction (first sync, after a failure, hourly): everything declared and rewritten
//! from whatever the kernel holds, in four phases a batch may end between (see
//! [`Transaction::splits`]), and the table's stale chains and sets removed.

use std::collections::BTreeSet;

use super::Ruleset;
use super::element_index::{ElementIndex, effective, element};
use super::op::{Op, declaration};
use super::transaction::{Existing, IndexChange, Part, Stats, Transaction, add_rules};

/// Everything, from whatever the kernel holds. `recreate` deletes the table first (in the same
/// transaction, so no packet sees it missing): the way out when an object exists with a definition
/// nft cannot change in place (a set's type, a chain's hook).
pub fn full(next: Ruleset, existing: &Existing, recreate: bool) -> Transaction {
    // After a table is deleted nothing exists: nothing to empty, nothing stale.
    let empty = Existing::default();
    let existing = if recreate { &empty } else { existing };
    let mut t = Builder::default();
    t.ops.push(Op::AddTable);
    if recreate {
        t.ops.push(Op::DeleteTable);
        t.ops.push(Op::AddTable);
    }
    t.declare(&next);
    t.refill(&next, existing);
    let index = ElementIndex::of(&next);
    t.replace_elements(&next, existing, &index);
    t.remove_stale(&next, existing);
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

    /// 1. Declarations: adding what exists changes nothing, so these may split anywhere.
    fn declare(&mut self, next: &Ruleset) {
        for c in next.chains() {
            self.ops.push(Op::AddChain(declaration(c)));
            self.step();
        }
        for s in next.sets() {
            self.ops.push(Op::AddSet(s.clone()));
            self.step();
        }
    }

    /// 2. Each part's chains emptied (if the table has them) and refilled together: a chain is never
    ///    seen empty. Endpoint chains come before the service chain that picks them.
    fn refill(&mut self, next: &Ruleset, existing: &Existing) {
        let parts = std::iter::once(Part::base(next)).chain(next.services.values().map(|s| Part::service(s)));
        for part in parts {
            for c in part.chains.iter().rev() {
                if existing.chains.contains(&c.name) {
                    self.ops.push(Op::FlushChain(c.name.clone()));
                }
                add_rules(&mut self.ops, c, &mut self.stats);
                self.stats.chains_written += 1;
            }
            self.step();
        }
    }

    /// 3. Every set and map emptied and refilled at once (affinity sets excepted: their elements are
    ///    live client state).
    fn replace_elements(&mut self, next: &Ruleset, existing: &Existing, index: &ElementIndex) {
        for s in next
            .sets()
            .into_iter()
            .filter(|s| s.timeout.is_none() && existing.sets.contains(&s.name))
        {
            self.ops.push(Op::FlushSet {
                name: s.name.clone(),
                is_map: s.is_map,
            });
        }
        for (key, values) in &index.0 {
            if let Some(v) = effective(values) {
                self.ops.push(Op::AddElement(element(key, v)));
                self.stats.elements_added += 1;
            }
        }
        self.step();
    }

    /// 4. What goes, once nothing refers to it: stale chains emptied first (they may jump to each
    ///    other), then deleted, then stale sets.
    fn remove_stale(&mut self, next: &Ruleset, existing: &Existing) {
        let chains = next.chains();
        let sets = next.sets();
        let wanted_chains: BTreeSet<&str> = chains.iter().map(|c| c.name.as_str()).collect();
        let wanted_sets: BTreeSet<&str> = sets.iter().map(|s| s.name.as_str()).collect();
        let stale_chains: Vec<&String> = existing
            .chains
            .iter()
            .filter(|c| !wanted_chains.contains(c.as_str()))
            .collect();
        let stale_sets: Vec<&String> = existing
            .sets
            .iter()
            .filter(|s| !wanted_sets.contains(s.as_str()))
            .collect();
        self.ops
            .extend(stale_chains.iter().map(|c| Op::FlushChain((*c).clone())));
        self.ops
            .extend(stale_chains.iter().map(|c| Op::DeleteChain((*c).clone())));
        for s in &stale_sets {
            self.ops.push(Op::FlushSet {
                name: (*s).clone(),
                is_map: false,
            });
        }
        for s in &stale_sets {
            self.ops.push(Op::DeleteSet {
                name: (*s).clone(),
                is_map: false,
            });
        }
        self.stats.chains_deleted = stale_chains.len();
    }
}
