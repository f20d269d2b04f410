//! The maps layout kept per service port, so that a sync renders only the ports that changed and
//! its transaction is the element difference of those ports ([`MapsCache::take_change`]). Elements
//! several ports share (an endpoint's hairpin pair, a cluster IP) are counted, so one port leaving
//! does not delete what another still needs.

use std::collections::BTreeMap;

use super::facts::Facts;
use super::{InUse, MapsChange, MapsElement, MapsTable, skeleton};
use crate::config::RenderConfig;
use crate::model::{Endpoint, NodeFacts, ServicePort, ServicePortName};

/// (set, key) of an element.
type Id = (String, Vec<String>);

/// One port's contribution.
#[derive(Clone, Debug, Default)]
struct PortFacts {
    elements: Vec<MapsElement>,
    in_use: InUse,
}

/// The table as the sum of its ports, and what changed since the last transaction was taken.
#[derive(Clone, Debug)]
pub struct MapsCache {
    node: NodeFacts,
    cfg: RenderConfig,
    ports: BTreeMap<ServicePortName, PortFacts>,
    /// Each element's value and how many ports hold it.
    elements: BTreeMap<Id, (Vec<String>, usize)>,
    /// Each dispatch rule's users.
    in_use: BTreeMap<(super::Group, &'static str, usize), usize>,
    /// The value each element touched since the last transaction had before (None: absent).
    touched: BTreeMap<Id, Option<Vec<String>>>,
    /// Whether a transaction was taken: before the first (a full load) nothing is tracked, which
    /// spares building and freeing an entry per element (at 600k elements, freeing them left the
    /// allocator slow for the next syncs).
    tracking: bool,
    /// The dispatch rules the kernel's table has (as of the last transaction).
    held_rules: InUse,
}

impl MapsCache {
    pub fn new(node: NodeFacts, cfg: RenderConfig) -> MapsCache {
        MapsCache {
            node,
            cfg,
            ports: BTreeMap::new(),
            elements: BTreeMap::new(),
            in_use: BTreeMap::new(),
            touched: BTreeMap::new(),
            tracking: false,
            held_rules: InUse::new(),
        }
    }

    /// Sets (or, with `None`, removes) one port's Service and endpoints.
    pub fn set_port(&mut self, name: &ServicePortName, port: Option<(&ServicePort, &[Endpoint])>) {
        if let Some(old) = self.ports.remove(name) {
            self.account(&old, false);
        }
        if let Some((svc, eps)) = port {
            let mut f = Facts::new(&self.node, &self.cfg);
            f.add_port(svc, eps);
            let (elements, in_use) = f.finish();
            let facts = PortFacts { elements, in_use };
            self.account(&facts, true);
            self.ports.insert(name.clone(), facts);
        }
    }

    fn account(&mut self, facts: &PortFacts, add: bool) {
        for e in &facts.elements {
            let id = (e.set.clone(), e.key.clone());
            if self.tracking && !self.touched.contains_key(&id) {
                let before = self.elements.get(&id).map(|(v, _)| v.clone());
                self.touched.insert(id.clone(), before);
            }
            match (add, self.elements.get_mut(&id)) {
                (true, Some((value, n))) => {
                    *value = e.value.clone();
                    *n += 1;
                }
                (true, None) => {
                    self.elements.insert(id, (e.value.clone(), 1));
                }
                (false, Some((_, n))) if *n > 1 => *n -= 1,
                (false, _) => {
                    self.elements.remove(&id);
                }
            }
        }
        for rule in &facts.in_use {
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
        let mut rules: InUse = self
            .in_use
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(r, _)| *r)
            .collect();
        rules.extend(self.held_rules.iter().copied());
        rules
    }

    /// The whole table (a first load, or a replacement).
    pub fn table(&self) -> MapsTable {
        let in_use = self.rules();
        let (chains, sets) = skeleton::skeleton(&self.node, &self.cfg, &in_use);
        let mut elements: Vec<MapsElement> = self
            .elements
            .iter()
            .map(|((set, key), (value, _))| MapsElement {
                set: set.clone(),
                key: key.clone(),
                value: value.clone(),
            })
            .collect();
        elements.extend(skeleton::fixed_elements(&self.node, &self.cfg));
        elements.sort();
        MapsTable {
            family: self.cfg.family,
            chains,
            sets,
            elements,
        }
    }

    /// The transaction since the last one: element steps, or a replacement when a port needs a
    /// dispatch rule the kernel's table lacks (then the kernel holds [`MapsCache::table`]).
    /// `first` takes a replacement whatever changed (the first load); so does the first call.
    pub fn take_change(&mut self, first: bool) -> MapsChange {
        let touched = std::mem::take(&mut self.touched);
        let untracked = !std::mem::replace(&mut self.tracking, true);
        let needed = self.rules();
        if first || untracked || !needed.is_subset(&self.held_rules) {
            // A replacement keeps the rules the table had (counts come and go), except the first.
            self.held_rules = match first {
                true => self
                    .in_use
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(r, _)| *r)
                    .collect(),
                false => needed,
            };
            return MapsChange::Replace;
        }
        let (mut delete, mut add) = (Vec::new(), Vec::new());
        for ((set, key), before) in touched {
            let now = self.elements.get(&(set.clone(), key.clone())).map(|(v, _)| v);
            if before.as_ref() == now {
                continue;
            }
            if let Some(value) = before {
                delete.push(MapsElement {
                    set: set.clone(),
                    key: key.clone(),
                    value,
                });
            }
            if let Some(value) = now {
                add.push(MapsElement {
                    set,
                    key,
                    value: value.clone(),
                });
            }
        }
        MapsChange::Elements { delete, add }
    }
}
