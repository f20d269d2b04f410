//! Every set and map element of a ruleset with how many objects add it: several service ports may
//! add the same element (the cluster IP of a multi-port Service is in `cluster-ips` once per port),
//! and it leaves the kernel only with its last contributor.

use std::collections::BTreeMap;

use super::{Element, Ruleset};

/// (container, key parts).
pub(super) type ElementKey = (&'static str, Vec<String>);
/// (verdict, comment).
pub(super) type ElementValue = (Option<String>, Option<String>);

/// Every element the ruleset holds, with how many objects (base, service ports) add it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ElementIndex(pub(super) BTreeMap<ElementKey, BTreeMap<ElementValue, usize>>);

impl ElementIndex {
    pub(super) fn of(ruleset: &Ruleset) -> ElementIndex {
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

    pub(super) fn apply(&mut self, delta: &Delta) {
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
pub(super) type Delta = BTreeMap<ElementKey, BTreeMap<ElementValue, isize>>;

/// Applies count changes to one key's values; a value whose count reaches 0 goes.
pub(super) fn add_counts(
    values: &mut BTreeMap<ElementValue, usize>,
    changes: &BTreeMap<ElementValue, isize>,
) {
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
pub(super) fn effective(values: &BTreeMap<ElementValue, usize>) -> Option<&ElementValue> {
    values.iter().find(|(_, n)| **n > 0).map(|(v, _)| v)
}

fn all_elements(r: &Ruleset) -> impl Iterator<Item = &Element> {
    r.base
        .elements
        .iter()
        .chain(r.services.values().flat_map(|s| s.elements.iter()))
}

pub(super) fn element(key: &ElementKey, value: &ElementValue) -> Element {
    Element {
        container: key.0,
        key: key.1.clone(),
        value: value.0.clone(),
        comment: value.1.clone(),
    }
}
