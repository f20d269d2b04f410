//! One step of a transaction, as plain data: what [`super::transaction`] decides, and what the two
//! writers turn into `nft -f` text ([`super::text`]) or netlink messages ([`super::netlink`]).

use super::{Chain, Element, Set};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `add table` (with svcnet's comment): creates it, or does nothing when it exists.
    AddTable,
    DeleteTable,
    /// A chain's declaration (its `rules` are empty: rules come as [`Op::AddRule`]).
    AddChain(Chain),
    FlushChain(String),
    DeleteChain(String),
    AddSet(Set),
    /// Removes every element of a set or map.
    FlushSet {
        name: String,
        is_map: bool,
    },
    DeleteSet {
        name: String,
        is_map: bool,
    },
    /// Appends a rule to a chain.
    AddRule {
        chain: String,
        rule: super::Rule,
    },
    AddElement(Element),
    /// Removes an element by its key (its value and comment are ignored).
    DeleteElement(Element),
}

/// A chain's declaration without its rules.
pub(super) fn declaration(c: &Chain) -> Chain {
    Chain {
        name: c.name.clone(),
        hook: c.hook,
        comment: c.comment.clone(),
        rules: Vec::new(),
    }
}
