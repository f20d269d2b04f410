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
use super::owners::{Owners, sticky_and_endpoints};
use super::store::{Store, Value};
use super::{Group, InUse, Key, MapsChange, MapsElement, MapsTable, SetName, Sticky, skeleton};
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
    /// The affinity port holding each key of the sticky verdict maps.
    sticky_owner: Owners,
    /// Each affinity port's Service port, to judge its map's entries by its endpoints.
    sticky_ports: BTreeMap<Sticky, ServicePortName>,
    /// Affinity entries made stale since the last transaction: a port's map with an endpoint
    /// (entries naming it) or without (every entry: the port lost its affinity).
    stale: BTreeSet<(Sticky, Option<(IpAddr, u16)>)>,
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
            sticky_owner: Owners::default(),
            sticky_ports: BTreeMap::new(),
            stale: BTreeSet::new(),
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
        let mut before = (None, BTreeSet::new());
        if let Some(Port(old)) = self.ports.take(name) {
            let (elements, in_use) = facts(&self.node, &self.cfg, &old);
            self.account(&elements, &in_use, false);
            before = sticky_and_endpoints(&elements, &in_use);
        }
        let mut after = (None, BTreeSet::new());
        if let Some(records) = port {
            let (elements, in_use) = facts(&self.node, &self.cfg, &records);
            self.account(&elements, &in_use, true);
            after = sticky_and_endpoints(&elements, &in_use);
            debug_assert_eq!(*name, records.0.name, "a port is set under its own name");
            self.ports.insert(Port(records));
        }
        if let Some(s) = before.0 {
            self.sticky_ports.remove(&s);
            if self.tracking && after.0 != Some(s) {
                self.stale.insert((s, None));
            } else if self.tracking {
                let gone = before.1.difference(&after.1);
                self.stale.extend(gone.map(|ep| (s, Some(*ep))));
            }
        }
        if let Some(s) = after.0 {
            self.sticky_ports.insert(s, name.clone());
        }
    }

    fn account(&mut self, elements: &[MapsElement], in_use: &InUse, add: bool) {
        for e in elements {
            if !self.sticky_owner.claim(e, add) {
                continue;
            }
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
    /// more stays (it matches nothing; removing it would replace the table), except an affinity
    /// port's chains and map, which go with the port (a growth deletes them).
    fn rules(&self) -> InUse {
        let mut rules = self.needed_rules();
        let kept = self
            .held_rules
            .iter()
            .filter(|(g, _, _)| !matches!(g, Group::Sticky(_)));
        rules.extend(kept);
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

    /// The affinity ports the table has.
    pub fn stickies(&self) -> impl Iterator<Item = Sticky> + '_ {
        self.sticky_ports.keys().copied()
    }

    /// The endpoints of affinity port `s` (all its keys' groups); `None` when no port has it.
    pub fn sticky_endpoints(&self, s: Sticky) -> Option<BTreeSet<(IpAddr, u16)>> {
        let records = self.records(self.sticky_ports.get(&s)?)?;
        let (elements, in_use) = facts(&self.node, &self.cfg, records);
        Some(sticky_and_endpoints(&elements, &in_use).1)
    }

    /// The affinity entries made stale since the last transaction was taken.
    pub fn stale_affinity(&self) -> &BTreeSet<(Sticky, Option<(IpAddr, u16)>)> {
        &self.stale
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

    /// The transaction since the last one: element steps, or a replacement when the skeleton
    /// changed (a port needs a dispatch rule the kernel's table lacks, an affinity port came or
    /// went; then the kernel holds [`MapsCache::table`]).
    /// `first` takes a replacement whatever changed (the first load); so does the first call.
    pub fn take_change(&mut self, first: bool) -> MapsChange {
        let change = self.peek_change(first);
        self.commit_change(first, &change);
        change
    }

    /// What [`MapsCache::take_change`] would give, without taking it: a writer that can change the
    /// skeleton itself (netlink: new dispatch rules, an affinity port come or gone) grows the table
    /// from [`MapsCache::held_skeleton`] to [`MapsCache::skeleton`] instead of replacing it.
    pub fn peek_change(&self, first: bool) -> MapsChange {
        let rules = self.rules();
        let gone = self.held_rules.iter().any(|r| !rules.contains(r));
        if first || !self.tracking || gone || !rules.is_subset(&self.held_rules) {
            return MapsChange::Replace;
        }
        self.element_steps()
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
        self.stale.clear();
        let untracked = !std::mem::replace(&mut self.tracking, true);
        self.held_rules = match (change, first || untracked) {
            // A replacement keeps the rules the table had (counts come and go), except the first.
            (MapsChange::Replace, true) => self.needed_rules(),
            _ => self.rules(),
        };
    }
}
