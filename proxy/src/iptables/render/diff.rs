//! What a partial payload of a complete render writes: the chains whose digest differs from the last
//! sync's, and the chains to delete (for `render`-style callers and tests; the daemon's [`Renderer`]
//! diffs port by port as it renders).
//!
//! [`Renderer`]: super::Renderer

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

use super::batch::ChainChanges;
use super::{Chain, Rendered, Table};

/// Content digest of every chain written by the last successful sync.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChainDigests(pub BTreeMap<(Table, String), u64>);

pub(super) fn digest(chain: &Chain) -> u64 {
    let mut h = DefaultHasher::new();
    chain.rules.hash(&mut h);
    h.finish()
}

impl Rendered {
    /// Digests of every chain, to diff two complete renders (bench, tests); the daemon's
    /// [`super::Renderer`] keeps digests port by port instead.
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
}

pub(super) fn since_digests<'a>(now: &'a Rendered, prev: &'a ChainDigests) -> ChainChanges<'a> {
    let differs = |table: Table, c: &Chain| prev.0.get(&(table, c.name.clone())) != Some(&digest(c));
    let current: HashMap<(Table, &str), ()> = now
        .filter
        .iter()
        .map(|c| ((Table::Filter, c.name.as_str()), ()))
        .chain(now.nat.iter().map(|c| ((Table::Nat, c.name.as_str()), ())))
        .collect();
    let gone = |table: Table| -> Vec<&'a str> {
        prev.0
            .keys()
            .filter(|(t, n)| *t == table && !current.contains_key(&(table, n.as_str())))
            .map(|(_, n)| n.as_str())
            .collect()
    };
    ChainChanges {
        filter: now
            .filter
            .iter()
            .filter(|c| differs(Table::Filter, c))
            .map(AsRef::as_ref)
            .collect(),
        filter_deletes: gone(Table::Filter),
        nat_shared: now
            .shared_nat()
            .iter()
            .filter(|c| differs(Table::Nat, c))
            .map(AsRef::as_ref)
            .collect(),
        nat_owned: now
            .services
            .values()
            .map(|s| {
                s.chains
                    .iter()
                    .filter(|c| differs(Table::Nat, c))
                    .map(AsRef::as_ref)
                    .collect::<Vec<_>>()
            })
            .filter(|g| !g.is_empty())
            .collect(),
        nat_deletes: gone(Table::Nat),
    }
}
