//! Which affinity port holds each key of the sticky verdict maps (`@sticky-keys`, `@sticky-records`
//! and their node-port twins): two Services claiming one external IP and port would otherwise give
//! the kernel two elements of one key, and it would refuse them and the whole transaction with
//! them. The first port to claim a key keeps it ([`super::render`] keeps the first in order); a
//! port refused a key claims it again when its records next change. Such keys are a misconfiguration
//! whose packets reach only one of the two Services anyway.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::{Group, InUse, Key, MapsElement, SetName, Sticky};

/// (node-port?, key) -> the port holding it and how many of its elements claim it.
#[derive(Clone, Debug, Default)]
pub(super) struct Owners(BTreeMap<(bool, Key), (Sticky, u32)>);

impl Owners {
    /// Whether `e` may go into the cache's store: a sticky verdict element only for the port
    /// holding its key; counts that port's claim (`add`) or gives it up.
    pub(super) fn claim(&mut self, e: &MapsElement, add: bool) -> bool {
        let (by_port, port, counts) = match e.set {
            SetName::StickyKey { by_port, port } => (by_port, port, true),
            SetName::StickyRecord { by_port, port } => (by_port, port, false),
            _ => return true,
        };
        let owner = self.0.get(&(by_port, e.key)).copied();
        match (add, owner) {
            (true, Some((p, _))) if p != port => false,
            (true, _) if !counts => true,
            (true, _) => {
                let n = owner.map_or(0, |(_, n)| n);
                self.0.insert((by_port, e.key), (port, n + 1));
                true
            }
            (false, Some((p, n))) if counts && p == port => {
                match n > 1 {
                    true => self.0.insert((by_port, e.key), (p, n - 1)),
                    false => self.0.remove(&(by_port, e.key)),
                };
                true
            }
            (false, _) => true,
        }
    }
}

/// The affinity port and (for an affinity port) the endpoints of one port's facts.
pub(super) fn sticky_and_endpoints(
    elements: &[MapsElement],
    in_use: &InUse,
) -> (Option<Sticky>, BTreeSet<(IpAddr, u16)>) {
    let sticky = in_use.iter().find_map(|(g, _, _)| match g {
        Group::Sticky(s) => Some(*s),
        _ => None,
    });
    // Only an affinity port's are wanted; every port's records pass through here on each change.
    let eps = match sticky {
        None => BTreeSet::new(),
        Some(_) => elements
            .iter()
            .filter(|e| matches!(e.set, SetName::Map(..)))
            .filter_map(|e| e.value)
            .collect(),
    };
    (sticky, eps)
}
