//! The maps layout kept per service port, so that a sync renders only the ports that changed and
//! its transaction is the element difference of those ports ([`MapsCache::take_change`]). Elements
//! several ports share (an endpoint's hairpin pair, a cluster IP) are counted, so one port leaving
//! does not delete what another still needs.
//!
//! Per port only its records are held (shared with the caller's state), not its elements: a port's
//! old elements are rendered again from its old records when it changes, which costs a render of
//! that port but spares a second copy of every element of the table.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;

use super::facts::Facts;
use super::store::{Store, Value};
use super::{InUse, Key, MapsChange, MapsElement, MapsTable, SetName, skeleton};
use crate::config::RenderConfig;
use crate::model::{Endpoints, NodeFacts, ServicePort, ServicePortName};
use crate::nftables::render::family_word;
use crate::nftables::render::naming::TABLE;

/// (set, key) of an element.
type Id = (SetName, Key);

/// One port's records as last given: its Service port and its endpoints.
pub type PortRecords = (Arc<ServicePort>, Option<Endpoints>);

/// A port's records, ordered and found by the name its Service port carries, so that the cache
/// does not hold a second copy of every port's name (three strings each).
#[derive(Clone, Debug)]
struct Port(PortRecords);

impl Borrow<ServicePortName> for Port {
    fn borrow(&self) -> &ServicePortName {
        &self.0.0.name
    }
}

impl PartialEq for Port {
    fn eq(&self, other: &Port) -> bool {
        self.0.0.name == other.0.0.name
    }
}

impl Eq for Port {}

impl PartialOrd for Port {
    fn partial_cmp(&self, other: &Port) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Port {
    fn cmp(&self, other: &Port) -> std::cmp::Ordering {
        self.0.0.name.cmp(&other.0.0.name)
    }
}

/// The table as the sum of its ports, and what changed since the last transaction was taken.
#[derive(Clone, Debug)]
pub struct MapsCache {
    node: NodeFacts,
    cfg: RenderConfig,
    ports: BTreeSet<Port>,
    /// Each element's value and how many ports hold it.
    elements: Store,
    /// Each dispatch rule's users.
    in_use: BTreeMap<(super::Group, &'static str, usize), usize>,
    /// The value each element touched since the last transaction had before (None: absent).
    touched: BTreeMap<Id, Option<Value>>,
    /// Whether a transaction was taken: before the first (a full load) nothing is tracked, which
    /// spares building and freeing an entry per element (at 600k elements, freeing them left the
    /// allocator slow for the next syncs).
    tracking: bool,
    /// The dispatch rules the kernel's table has (as of the last transaction).
    held_rules: InUse,
}

fn facts(node: &NodeFacts, cfg: &RenderConfig, (svc, eps): &PortRecords) -> (Vec<MapsElement>, InUse) {
    let mut f = Facts::new(node, cfg);
    f.add_port(svc, eps.as_deref().unwrap_or_default());
    f.finish()
}

impl MapsCache {
    pub fn new(node: NodeFacts, cfg: RenderConfig) -> MapsCache {
        MapsCache {
            node,
            cfg,
            ports: BTreeSet::new(),
            elements: Store::default(),
            in_use: BTreeMap::new(),
            touched: BTreeMap::new(),
            tracking: false,
            held_rules: InUse::new(),
        }
    }

    pub fn node(&self) -> &NodeFacts {
        &self.node
    }

    pub fn cfg(&self) -> &RenderConfig {
        &self.cfg
    }

    /// The records a port was last given (what the table holds for it).
    pub fn records(&self, name: &ServicePortName) -> Option<&PortRecords> {
        self.ports.get(name).map(|p| &p.0)
    }

    /// The ports the table holds.
    pub fn port_names(&self) -> impl Iterator<Item = &ServicePortName> {
        self.ports.iter().map(|p| &p.0.0.name)
    }

    /// Sets (or, with `None`, removes) one port's Service and endpoints; `name` is the Service
    /// port's own name.
    pub fn set_port(&mut self, name: &ServicePortName, port: Option<PortRecords>) {
        if let Some(Port(old)) = self.ports.take(name) {
            let (elements, in_use) = facts(&self.node, &self.cfg, &old);
            self.account(&elements, &in_use, false);
        }
        if let Some(records) = port {
            let (elements, in_use) = facts(&self.node, &self.cfg, &records);
            self.account(&elements, &in_use, true);
            debug_assert_eq!(*name, records.0.name, "a port is set under its own name");
            self.ports.insert(Port(records));
        }
    }

    fn account(&mut self, elements: &[MapsElement], in_use: &InUse, add: bool) {
        for e in elements {
            let id = (e.set, e.key);
            if self.tracking && !self.touched.contains_key(&id) {
                let before = self.elements.get(e.set, &e.key).map(|(v, _)| v);
                self.touched.insert(id, before);
            }
            match (add, self.elements.get(e.set, &e.key)) {
                (true, Some((_, n))) => self.elements.put(e.set, &e.key, (e.value, n.saturating_add(1))),
                (true, None) => self.elements.put(e.set, &e.key, (e.value, 1)),
                (false, Some((value, n))) if n > 1 => self.elements.put(e.set, &e.key, (value, n - 1)),
                (false, _) => self.elements.remove(e.set, &e.key),
            }
        }
        for rule in in_use {
            let n = self.in_use.entry(*rule).or_default();
            if add {
                *n += 1;
            } else {
                *n = n.saturating_sub(1);
            }
        }
    }

    /// Dispatch rules some port needs, and those the kernel's table has: a rule nobody needs any
    /// more stays (it matches nothing; removing it would replace the table).
    fn rules(&self) -> InUse {
        let mut rules = self.needed_rules();
        rules.extend(self.held_rules.iter().copied());
        rules
    }

    fn needed_rules(&self) -> InUse {
        self.in_use
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(r, _)| *r)
            .collect()
    }

    /// The dispatch rules the kernel's table has, as of the last transaction taken.
    pub fn held_rules(&self) -> &InUse {
        &self.held_rules
    }

    /// The table's chains and sets, without elements.
    pub fn skeleton(&self) -> MapsTable {
        self.skeleton_of(&self.rules())
    }

    /// The chains and sets the kernel's table has, as of the last transaction taken.
    pub fn held_skeleton(&self) -> MapsTable {
        self.skeleton_of(&self.held_rules)
    }

    fn skeleton_of(&self, rules: &InUse) -> MapsTable {
        let (chains, sets) = skeleton::skeleton(&self.node, &self.cfg, rules);
        MapsTable {
            family: self.cfg.family,
            chains,
            sets,
            elements: Vec::new(),
        }
    }

    /// Every element of the table, the node's fixed ones first, without copying the cache.
    pub fn elements(&self) -> impl Iterator<Item = MapsElement> + '_ {
        skeleton::fixed_elements(&self.node, &self.cfg).into_iter().chain(
            self.elements
                .iter()
                .map(|(set, key, (value, _))| MapsElement { set, key, value }),
        )
    }

    /// The endpoints `key` dispatches to through the slot maps of `groups`: the map of the count
    /// whose set holds the key (slots are dense from 0).
    pub fn endpoints_of(&self, groups: &[super::Group], key: Key) -> BTreeSet<(IpAddr, u16)> {
        let mut out = BTreeSet::new();
        let rules = self.rules();
        for &g in groups {
            let counts = rules.iter().filter(|(r, _, _)| *r == g);
            let counts: BTreeSet<u32> = counts.filter_map(|(_, _, n)| u32::try_from(*n).ok()).collect();
            let Some(n) = counts
                .into_iter()
                .find(|&n| self.elements.get(SetName::Count(g, n), &key).is_some())
            else {
                continue;
            };
            for slot in 0.. {
                match self
                    .elements
                    .get(SetName::Map(g, n), &key.with(super::Part::Slot(slot)))
                {
                    Some((Some(ep), _)) => out.insert(ep),
                    _ => break,
                };
            }
        }
        out
    }

    /// Whether `key` is in one of `group`'s sets (`sticky-<T>`: ClientIP affinity) for a timeout
    /// the table has rules for.
    pub fn in_count_set(&self, group: super::Group, key: Key) -> bool {
        self.rules()
            .iter()
            .filter(|(g, _, _)| *g == group)
            .any(|(_, _, t)| {
                let t = u32::try_from(*t).unwrap_or(u32::MAX);
                self.elements.get(SetName::Count(group, t), &key).is_some()
            })
    }

    /// Elements in the table.
    pub fn len(&self) -> usize {
        self.elements.len()
    }

    pub fn is_empty(&self) -> bool {
        self.elements.len() == 0
    }

    /// The whole table (a first load, or a replacement), elements sorted.
    pub fn table(&self) -> MapsTable {
        let mut t = self.skeleton();
        t.elements = self.elements().collect();
        t.elements.sort();
        t
    }

    /// The replacement transaction's `nft -f` text (`add table; delete table;` then the table),
    /// written straight from the cache: the same lines as [`MapsChange::text`] of [`MapsCache::table`].
    pub fn replace_text(&self) -> String {
        let fam = family_word(self.cfg.family);
        let mut out = format!("add table {fam} {TABLE}\ndelete table {fam} {TABLE}\n");
        out.push_str(&self.skeleton().text());
        let mut elements: Vec<MapsElement> = skeleton::fixed_elements(&self.node, &self.cfg);
        elements.sort();
        let mut fixed = elements.into_iter().peekable();
        for (set, key, (value, _)) in self.elements.iter() {
            let e = MapsElement { set, key, value };
            while let Some(f) = fixed.next_if(|f| *f < e) {
                super::text::write_element(&mut out, fam, &f);
            }
            super::text::write_element(&mut out, fam, &e);
        }
        for f in fixed {
            super::text::write_element(&mut out, fam, &f);
        }
        out
    }

    /// The transaction since the last one: element steps, or a replacement when a port needs a
    /// dispatch rule the kernel's table lacks (then the kernel holds [`MapsCache::table`]).
    /// `first` takes a replacement whatever changed (the first load); so does the first call.
    pub fn take_change(&mut self, first: bool) -> MapsChange {
        let change = self.peek_change(first);
        self.commit_change(first, &change);
        change
    }

    /// What [`MapsCache::take_change`] would give, without taking it: a writer that can add the
    /// missing dispatch rules itself (netlink) looks at [`MapsCache::new_rules`] instead of
    /// replacing the table.
    pub fn peek_change(&self, first: bool) -> MapsChange {
        if first || !self.tracking || !self.rules().is_subset(&self.held_rules) {
            return MapsChange::Replace;
        }
        self.element_steps()
    }

    /// The dispatch rules some port needs that the kernel's table lacks.
    pub fn new_rules(&self) -> InUse {
        self.rules().difference(&self.held_rules).copied().collect()
    }

    /// The element steps since the last transaction, whether or not the skeleton changed.
    pub fn element_steps(&self) -> MapsChange {
        let (mut delete, mut add) = (Vec::new(), Vec::new());
        for (&(set, key), before) in &self.touched {
            let now = self.elements.get(set, &key).map(|(v, _)| v);
            if *before == now {
                continue;
            }
            if let Some(value) = before {
                delete.push(MapsElement {
                    set,
                    key,
                    value: *value,
                });
            }
            if let Some(value) = now {
                add.push(MapsElement { set, key, value });
            }
        }
        MapsChange::Elements { delete, add }
    }

    /// Records that the kernel now holds the table: after a replacement (`Replace`) the rules it was
    /// written with; after element steps (which may have come with new dispatch rules) every rule
    /// needed so far.
    pub fn commit_change(&mut self, first: bool, change: &MapsChange) {
        self.touched.clear();
        let untracked = !std::mem::replace(&mut self.tracking, true);
        self.held_rules = match (change, first || untracked) {
            // A replacement keeps the rules the table had (counts come and go), except the first.
            (MapsChange::Replace, true) => self.needed_rules(),
            _ => self.rules(),
        };
    }
}
