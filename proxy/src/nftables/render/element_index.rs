//! Every set and map element of a ruleset with how many objects add it: several service ports may
//! add the same element (the cluster IP of a multi-port Service is in `cluster-ips` once per port),
//! and it leaves the kernel only with its last contributor.

use std::collections::BTreeMap;

use super::Element;

/// (container, key parts).
pub(super) type ElementKey = (&'static str, Vec<String>);
/// (verdict, comment).
pub(super) type ElementValue = (Option<String>, Option<String>);
/// The values contributed for one key, sorted, with their counts: nearly always exactly one, so a
/// vector rather than a map (the index is kept for the daemon's life, one entry per element).
pub(super) type Contributors = Vec<(ElementValue, usize)>;

/// Every element the kernel holds, with how many objects (base, service ports) add it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ElementIndex(pub(super) BTreeMap<ElementKey, Contributors>);

impl ElementIndex {
    /// Counts one object's elements in.
    pub(super) fn add(&mut self, elements: &[Element]) {
        for e in elements {
            let values = self.0.entry((e.container, e.key.clone())).or_default();
            let value = (e.value.clone(), e.comment.clone());
            match values.binary_search_by(|(v, _)| v.cmp(&value)) {
                Ok(i) => values[i].1 += 1,
                Err(i) => {
                    values.insert(i, (value, 1));
                    values.shrink_to_fit();
                }
            }
        }
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
pub(super) fn add_counts(values: &mut Contributors, changes: &BTreeMap<ElementValue, isize>) {
    for (value, n) in changes {
        match values.binary_search_by(|(v, _)| v.cmp(value)) {
            Ok(i) => {
                let next = values[i].1.saturating_add_signed(*n);
                if next == 0 {
                    values.remove(i);
                } else {
                    values[i].1 = next;
                }
            }
            Err(i) => {
                let next = 0usize.saturating_add_signed(*n);
                if next > 0 {
                    values.insert(i, (value.clone(), next));
                }
            }
        }
    }
    values.shrink_to_fit();
}

/// The element the kernel holds for a key: one value wins when contributors disagree (an invalid
/// state, e.g. two Services claiming one IP for a moment), deterministically the smallest.
pub(super) fn effective(values: &Contributors) -> Option<&ElementValue> {
    values.iter().find(|(_, n)| *n > 0).map(|(v, _)| v)
}

pub(super) fn element(key: &ElementKey, value: &ElementValue) -> Element {
    Element {
        container: key.0,
        key: key.1.clone(),
        value: value.0.clone(),
        comment: value.1.clone(),
    }
}
