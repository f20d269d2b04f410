//! Keeping a [`ProxyState`] up to date from the records at every sync, touching only what changed.
//!
//! The reflector stores hand out the same `Arc` for a record until its object changes, so a record's
//! allocation identifies its version. A Service's ports are inserted again only when its `Arc` is new,
//! and the EndpointSlices of one Service (they merge only with each other) are merged again only when
//! the set of their `Arc`s changed; the state is patched in place. Conversion itself happened once,
//! when the watch event arrived (see [`super::record`]).

use std::collections::HashMap;
use std::sync::Arc;

use super::endpoints::merge_slices;
use super::record::{ServiceRecord, SliceRecord};
use super::{Family, ProxyState, ServicePortName};

/// The state of one IP family and the records it was built from. What a record contributed (port
/// names, errors) is read from the record itself when needed, not copied.
#[derive(Debug)]
pub struct ModelCache {
    family: Family,
    state: ProxyState,
    /// By the address of the shared record; holding the `Arc` keeps the address from being reused.
    services: HashMap<usize, Arc<ServiceRecord>>,
    /// By (namespace, service name) of the slices: the set of slices, sorted by address.
    groups: HashMap<(String, String), Vec<Arc<SliceRecord>>>,
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

fn same(a: &[Arc<SliceRecord>], b: &[Arc<SliceRecord>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y))
}

impl ModelCache {
    pub fn new(family: Family) -> ModelCache {
        ModelCache {
            family,
            state: ProxyState::default(),
            services: HashMap::new(),
            groups: HashMap::new(),
        }
    }

    /// The state as of the last [`ModelCache::update`].
    pub fn state(&self) -> &ProxyState {
        &self.state
    }

    /// Brings the state up to date with these records; afterwards it equals [`ProxyState::from_k8s`]
    /// on the objects they came from (errors in another order).
    pub fn update(&mut self, services: &[Arc<ServiceRecord>], slices: &[Arc<SliceRecord>]) {
        self.update_services(services);
        self.update_slices(slices);
        let family = self.family;
        let service_errors = self.services.values().flat_map(|r| r.ports(family).errors.iter());
        let slice_errors = self
            .groups
            .values()
            .flatten()
            .filter(|s| s.family == Some(family))
            .flat_map(|s| s.errors.iter());
        self.state.errors = service_errors.chain(slice_errors).cloned().collect();
    }

    fn update_services(&mut self, services: &[Arc<ServiceRecord>]) {
        let mut kept = HashMap::with_capacity(services.len());
        let mut new = Vec::new();
        for svc in services {
            match self.services.remove(&addr(svc)) {
                Some(c) => {
                    kept.insert(addr(svc), c);
                }
                None => new.push(svc),
            }
        }
        // Removals before additions: a replaced Service gives back the same port names.
        for gone in std::mem::take(&mut self.services).into_values() {
            for p in service_ports(&gone, self.family) {
                self.state.services.remove(p);
            }
        }
        for svc in new {
            for p in svc.ports(self.family).ports.iter() {
                self.state.services.insert(p.name.clone(), Arc::clone(p));
            }
            kept.insert(addr(svc), Arc::clone(svc));
        }
        self.services = kept;
    }

    fn update_slices(&mut self, slices: &[Arc<SliceRecord>]) {
        let mut by_service: HashMap<(&str, &str), Vec<Arc<SliceRecord>>> = HashMap::new();
        for s in slices.iter().filter(|s| s.family == Some(self.family)) {
            by_service.entry(s.service_key()).or_default().push(Arc::clone(s));
        }
        let mut kept = HashMap::with_capacity(by_service.len());
        let mut changed = Vec::new();
        for ((ns, name), mut group) in by_service {
            let key = (ns.to_string(), name.to_string());
            // The stores' order is not stable; identity is the set of slices.
            group.sort_by_key(addr);
            match self.groups.remove(&key) {
                Some(c) if same(&c, &group) => {
                    kept.insert(key, c);
                }
                Some(c) => {
                    self.groups.insert(key.clone(), c);
                    changed.push((key, group));
                }
                None => changed.push((key, group)),
            }
        }
        for gone in std::mem::take(&mut self.groups).into_values() {
            for p in group_ports(&gone, self.family) {
                self.state.endpoints.remove(p);
            }
        }
        for (key, group) in changed {
            // The errors are the slices' own; update() collects them from the records.
            let (endpoints, _errors) = merge_slices(group.iter().map(AsRef::as_ref), self.family);
            self.state.endpoints.extend(endpoints);
            kept.insert(key, group);
        }
        self.groups = kept;
    }
}

#[cfg(test)]
mod tests;
