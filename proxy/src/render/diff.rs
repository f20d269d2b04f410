//! What a partial payload of a complete render writes: the chains whose digest differs from the last
//! sync's, and the chains to delete (for `render`-style callers and tests; the daemon's [`Renderer`]
//! diffs port by port as it renders).
//!
//! [`Renderer`]: super::Renderer

use std::collections::HashMap;

use super::payload::{Changes, digest};
use super::{Chain, ChainDigests, Rendered, Table};

pub(super) fn since_digests<'a>(now: &'a Rendered, prev: &'a ChainDigests) -> Changes<'a> {
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
    Changes {
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
