//! The transaction from one maps-layout table to the next: when the skeleton (chains, rules, sets)
//! is the same, element deletions and additions only (a map slot whose endpoint changed is deleted
//! and added again); when it is not (an endpoint count, protocol or node setting new to the table),
//! the whole table replaced in one transaction (deleted and declared again in the same batch, so no
//! packet sees it missing).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use std::net::IpAddr;

use super::{Key, MapsElement, MapsTable, SetName};
use crate::model::Family;
use crate::nftables::render::family_word;
use crate::nftables::render::naming::TABLE;

/// What takes the kernel's table from one state to the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapsChange {
    /// Element steps only: no rule, chain or set is added or removed.
    Elements {
        delete: Vec<MapsElement>,
        add: Vec<MapsElement>,
    },
    /// The skeleton changed: the table is replaced.
    Replace,
}

type Index = BTreeMap<(SetName, Key), Option<(IpAddr, u16)>>;

fn index(t: &MapsTable) -> Index {
    t.elements.iter().map(|e| ((e.set, e.key), e.value)).collect()
}

/// Elements of `from` that `to` lacks or holds with another value.
fn missing(from: &Index, to: &Index) -> Vec<MapsElement> {
    from.iter()
        .filter(|(k, v)| to.get(*k) != Some(*v))
        .map(|((set, key), value)| MapsElement {
            set: *set,
            key: *key,
            value: *value,
        })
        .collect()
}

/// The change from `before` (what the kernel holds) to `after`.
pub fn change(before: &MapsTable, after: &MapsTable) -> MapsChange {
    if before.family != after.family || before.chains != after.chains || before.sets != after.sets {
        return MapsChange::Replace;
    }
    let (b, a) = (index(before), index(after));
    MapsChange::Elements {
        delete: missing(&b, &a),
        add: missing(&a, &b),
    }
}

impl MapsChange {
    /// The change as `nft -f` input (one transaction); `after` is the table it leads to.
    pub fn text(&self, after: &MapsTable) -> String {
        let fam = family_word(after.family);
        match self {
            MapsChange::Replace => {
                format!(
                    "add table {fam} {TABLE}\ndelete table {fam} {TABLE}\n{}",
                    after.text()
                )
            }
            MapsChange::Elements { .. } => self.elements_text(after.family),
        }
    }

    /// The element steps as `nft -f` input (empty for a replacement): deletions first, so a map
    /// slot that changed endpoint is deleted and added again in the same transaction.
    pub fn elements_text(&self, family: Family) -> String {
        let fam = family_word(family);
        let mut out = String::new();
        if let MapsChange::Elements { delete, add } = self {
            for e in delete {
                let _ = writeln!(out, "delete element {fam} {TABLE} {} {{ {} }}", e.set, e.key);
            }
            for e in add {
                super::text::write_element(&mut out, fam, e);
            }
        }
        out
    }

    /// Element steps in the transaction (none for a replacement).
    pub fn len(&self) -> usize {
        match self {
            MapsChange::Elements { delete, add } => delete.len() + add.len(),
            MapsChange::Replace => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0 && *self != MapsChange::Replace
    }
}
