//! What a partial sync writes: the chains that differ between two renders, and the chains to delete.
//!
//! The daemon diffs the new render against the one the kernel holds ([`since_render`]): a service port
//! whose rules came unchanged from the render cache shares them by pointer with the previous render and
//! is skipped without looking at its rules, so a one-service change costs O(services) pointer checks
//! instead of hashing every rule. [`since_digests`] gives the same answer from content digests (for
//! callers that keep only digests, such as the bench).

use std::collections::HashMap;
use std::sync::Arc;

use super::payload::{Changes, digest};
use super::{Chain, ChainDigests, Rendered, Table};

/// Chains of `now` that differ from (or are missing in) `before`, and names of `before` not in `now`.
fn compare<'a>(now: &'a [Arc<Chain>], before: &'a [Arc<Chain>]) -> (Vec<&'a Chain>, Vec<&'a str>) {
    let old: HashMap<&str, &Arc<Chain>> = before.iter().map(|c| (c.name.as_str(), c)).collect();
    let changed = now
        .iter()
        .filter(|c| {
            old.get(c.name.as_str())
                .is_none_or(|o| !Arc::ptr_eq(o, c) && o.rules != c.rules)
        })
        .map(AsRef::as_ref)
        .collect();
    let kept: HashMap<&str, ()> = now.iter().map(|c| (c.name.as_str(), ())).collect();
    let gone = before
        .iter()
        .map(|c| c.name.as_str())
        .filter(|n| !kept.contains_key(n))
        .collect();
    (changed, gone)
}

pub(super) fn since_render<'a>(now: &'a Rendered, before: &'a Rendered) -> Changes<'a> {
    let (filter, filter_deletes) = compare(&now.filter, &before.filter);
    let (nat_shared, mut nat_deletes) = compare(now.shared_nat(), before.shared_nat());
    let mut nat_owned = Vec::new();
    for (name, rules) in &now.services {
        match before.services.get(name) {
            Some(old) if Arc::ptr_eq(old, rules) => {}
            Some(old) => {
                let (changed, gone) = compare(&rules.chains, &old.chains);
                if !changed.is_empty() {
                    nat_owned.push(changed);
                }
                nat_deletes.extend(gone);
            }
            None => nat_owned.push(rules.chains.iter().map(AsRef::as_ref).collect()),
        }
    }
    for (name, old) in &before.services {
        if !now.services.contains_key(name) {
            nat_deletes.extend(old.chains.iter().map(|c| c.name.as_str()));
        }
    }
    Changes {
        filter,
        filter_deletes,
        nat_shared,
        nat_owned,
        nat_deletes,
    }
}

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
