//! Keeping a [`ProxyState`] up to date from the records at every sync, touching only what changed.
//!
//! The reflector stores hand out the same `Arc` for a record until its object changes, so a record's
//! allocation identifies its version. A Service's ports are inserted again only when its `Arc` is new,
//! and the EndpointSlices of one Service (they merge only with each other) are merged again only when
//! the set of their `Arc`s changed; the state is patched in place. Conversion itself happened once,
//! when the watch event arrived (see [`super::record`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use super::endpoints::merge_slices;
use super::record::{ServiceRecord, SliceRecord};
use super::{Family, ProxyState, ServicePortName};

/// The state of one IP family and the records it was built from. What a record contributed (port
/// names, errors) is read from the record itself when needed, not copied. An update costs a lookup
/// per record (by address, no allocation) plus work for the changed ones only.
#[derive(Debug)]
pub struct ModelCache {
    family: Family,
    state: ProxyState,
    /// The number of the last update: a record seen in it carries it.
    generation: u64,
    /// By the address of the shared record; holding the `Arc` keeps the address from being reused.
    services: HashMap<usize, Seen<ServiceRecord>>,
    /// Every family's slices, by address.
    slices: HashMap<usize, Seen<SliceRecord>>,
    /// By (namespace, service name) of the slices: the set of slices, sorted by address.
    groups: HashMap<(String, String), Vec<Arc<SliceRecord>>>,
    changed: Changed,
}

/// A record and the last update that saw it.
#[derive(Debug)]
struct Seen<T> {
    record: Arc<T>,
    generation: u64,
}

/// Which entries of the state the last update may have changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Changed {
    /// Any of them (the first update).
    #[default]
    All,
    /// Only these port names' `services` and `endpoints` entries; every other entry is the very
    /// `Arc` it was before.
    Ports(BTreeSet<ServicePortName>),
}

impl Changed {
    fn insert(&mut self, name: &ServicePortName) {
        if let Changed::Ports(set) = self {
            set.insert(name.clone());
        }
    }
}

/// The port names a Service record gives `family`.
fn service_ports(rec: &ServiceRecord, family: Family) -> impl Iterator<Item = &ServicePortName> {
    rec.ports(family).ports.iter().map(|p| &p.name)
}

/// The port names a group of slices gives `family`: the keys their merge produced.
fn group_ports(group: &[Arc<SliceRecord>], family: Family) -> impl Iterator<Item = &ServicePortName> {
    group
        .iter()
        .filter(move |s| s.family == Some(family))
        .flat_map(|s| s.ports.iter().map(|p| &p.name))
}

fn addr<T>(a: &Arc<T>) -> usize {
    Arc::as_ptr(a) as usize
}

fn group_key(s: &SliceRecord) -> (String, String) {
    let (ns, name) = s.service_key();
    (ns.to_string(), name.to_string())
}

/// Marks every record of `seen` as seen in `generation`; returns those not seen before.
fn mark<'a, T>(
    seen: &mut HashMap<usize, Seen<T>>,
    records: impl IntoIterator<Item = &'a Arc<T>>,
    generation: u64,
) -> Vec<Arc<T>>
where
    T: 'a,
{
    let mut new = Vec::new();
    for r in records {
        match seen.get_mut(&addr(r)) {
            Some(s) => s.generation = generation,
            None => {
                seen.insert(
                    addr(r),
                    Seen {
                        record: Arc::clone(r),
                        generation,
                    },
                );
                new.push(Arc::clone(r));
            }
        }
    }
    new
}

/// Removes and returns the records `generation` did not see.
fn sweep<T>(seen: &mut HashMap<usize, Seen<T>>, generation: u64) -> Vec<Arc<T>> {
    seen.extract_if(|_, s| s.generation != generation)
        .map(|(_, s)| s.record)
        .collect()
}

impl ModelCache {
    pub fn new(family: Family) -> ModelCache {
        ModelCache {
            family,
            state: ProxyState::default(),
            generation: 0,
            services: HashMap::new(),
            slices: HashMap::new(),
            groups: HashMap::new(),
            changed: Changed::All,
        }
    }

    /// The state as of the last [`ModelCache::update`].
    pub fn state(&self) -> &ProxyState {
        &self.state
    }

    /// What the last [`ModelCache::update`] may have changed in the state.
    pub fn changed(&self) -> &Changed {
        &self.changed
    }

    /// Brings the state up to date with these records; afterwards it equals [`ProxyState::from_k8s`]
    /// on the objects they came from (errors in another order).
    pub fn update(&mut self, services: &[Arc<ServiceRecord>], slices: &[Arc<SliceRecord>]) {
        self.changed = if self.generation == 0 {
            Changed::All
        } else {
            Changed::Ports(BTreeSet::new())
        };
        self.generation += 1;
        let mut errors = self.update_services(services);
        errors |= self.update_slices(slices);
        // The errors are the records' own: they change only when a record with errors comes or goes.
        if !errors && self.generation > 1 {
            return;
        }
        let family = self.family;
        let service_errors = self
            .services
            .values()
            .flat_map(|s| s.record.ports(family).errors.iter());
        let slice_errors = self
            .slices
            .values()
            .filter(|s| s.record.family == Some(family))
            .flat_map(|s| s.record.errors.iter());
        self.state.errors = service_errors.chain(slice_errors).cloned().collect();
    }

    /// True when a Service record with errors came or went.
    fn update_services(&mut self, services: &[Arc<ServiceRecord>]) -> bool {
        let new = mark(&mut self.services, services, self.generation);
        let gone = sweep(&mut self.services, self.generation);
        // Removals before additions: a replaced Service gives back the same port names.
        for rec in &gone {
            for p in service_ports(rec, self.family) {
                self.state.services.remove(p);
                self.changed.insert(p);
            }
        }
        for rec in &new {
            for p in rec.ports(self.family).ports.iter() {
                self.state.services.insert(p.name.clone(), Arc::clone(p));
                self.changed.insert(&p.name);
            }
        }
        let family = self.family;
        new.iter()
            .chain(&gone)
            .any(|r| !r.ports(family).errors.is_empty())
    }

    /// True when a slice of this family with errors came or went. Every family's slices are kept
    /// (by address): telling a known one's family apart would read every record at every update.
    fn update_slices(&mut self, slices: &[Arc<SliceRecord>]) -> bool {
        let family = self.family;
        let mut new = mark(&mut self.slices, slices, self.generation);
        let mut gone = sweep(&mut self.slices, self.generation);
        new.retain(|s| s.family == Some(family));
        gone.retain(|s| s.family == Some(family));
        let mut dirty: HashSet<(String, String)> = HashSet::new();
        for s in &gone {
            let key = group_key(s);
            if let Some(group) = self.groups.get_mut(&key) {
                group.retain(|g| !Arc::ptr_eq(g, s));
            }
            dirty.insert(key);
        }
        for s in &new {
            let key = group_key(s);
            self.groups.entry(key.clone()).or_default().push(Arc::clone(s));
            dirty.insert(key);
        }
        for key in dirty {
            self.merge_group(key, &gone);
        }
        new.iter().chain(&gone).any(|s| !s.errors.is_empty())
    }

    /// Merges the slices of one Service again: its old ports' endpoints go (the group before this
    /// update is the current one plus the `gone` slices of the same key), the merge's come in.
    fn merge_group(&mut self, key: (String, String), gone: &[Arc<SliceRecord>]) {
        let family = self.family;
        let mut old: Vec<ServicePortName> = Vec::new();
        for s in gone.iter().filter(|s| group_key(s) == key) {
            old.extend(group_ports(std::slice::from_ref(s), family).cloned());
        }
        let group = self.groups.remove(&key).unwrap_or_default();
        old.extend(group_ports(&group, family).cloned());
        for p in &old {
            self.state.endpoints.remove(p);
            self.changed.insert(p);
        }
        if group.is_empty() {
            return;
        }
        let mut group = group;
        // The stores' order is not stable; identity is the set of slices.
        group.sort_by_key(addr);
        // The errors are the slices' own; update() collects them from the records.
        let (endpoints, _errors) = merge_slices(group.iter().map(AsRef::as_ref), family);
        for p in endpoints.keys() {
            self.changed.insert(p);
        }
        self.state.endpoints.extend(endpoints);
        self.groups.insert(key, group);
    }
}

#[cfg(test)]
mod tests;
