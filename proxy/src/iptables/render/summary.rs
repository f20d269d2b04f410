//! What the render cache keeps of one service port between syncs ([`Summary`]: what it was rendered
//! from, its lines in the shared chains, its own chains' names and digests, never their text) and
//! how a port's inputs are recognised as unchanged ([`Inputs`]).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::Chain;
use super::diff::digest;
use super::service::ServiceRules;
use crate::model::{Endpoint, Endpoints, ServicePort};

/// One service port as written to the kernel.
#[derive(Debug)]
pub struct Summary {
    /// What it was rendered from: the model's shared objects (the same `Arc`s mean the same
    /// inputs without hashing them) and a hash of their content (equal content rendered again).
    pub(super) service: Arc<ServicePort>,
    pub(super) endpoints: Option<Endpoints>,
    pub(super) inputs: u64,
    /// Its lines in the shared chains (`chains` is empty: only names and digests are kept).
    pub(super) rules: Arc<ServiceRules>,
    /// Its own chains' names, one per line, in payload order; `digests` in the same order.
    pub(super) names: String,
    pub(super) digests: Box<[u64]>,
    pub(super) rule_count: usize,
}

impl Summary {
    /// Splits a rendered port into its summary and its chains.
    pub(super) fn new(from: &Inputs<'_>, mut rules: ServiceRules) -> (Summary, Vec<Arc<Chain>>) {
        let chains = std::mem::take(&mut rules.chains);
        rules.shrink_to_fit(); // kept for as long as the port is unchanged: no spare capacity
        let mut names = String::with_capacity(chains.iter().map(|c| c.name.len() + 1).sum());
        for c in &chains {
            names.push_str(&c.name);
            names.push('\n');
        }
        let summary = Summary {
            service: Arc::clone(from.service),
            endpoints: from.endpoints.cloned(),
            inputs: from.hash,
            rules: Arc::new(rules),
            names,
            digests: chains.iter().map(|c| digest(c)).collect(),
            rule_count: chains.iter().map(|c| c.rules.len()).sum(),
        };
        (summary, chains)
    }

    /// This summary for a port whose inputs have the same content: itself when they are the very
    /// objects it was rendered from, else a copy pointing at the new ones (no render).
    pub(super) fn rebased(self: &Arc<Summary>, inputs: &Inputs<'_>) -> Arc<Summary> {
        let same_endpoints = match (&self.endpoints, inputs.endpoints) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if Arc::ptr_eq(&self.service, inputs.service) && same_endpoints {
            return Arc::clone(self);
        }
        Arc::new(Summary {
            service: Arc::clone(inputs.service),
            endpoints: inputs.endpoints.cloned(),
            inputs: self.inputs,
            rules: Arc::clone(&self.rules),
            names: self.names.clone(),
            digests: self.digests.clone(),
            rule_count: self.rule_count,
        })
    }

    /// (name, digest) of each own chain.
    pub fn chains(&self) -> impl Iterator<Item = (&str, u64)> {
        self.names.lines().zip(self.digests.iter().copied())
    }
}

/// SipHash of a port and its endpoints (fixed keys, so equal inputs always hash equal). A 64-bit
/// collision between two versions of the same port is the only way to skip a changed port.
fn inputs_hash(svc: &ServicePort, eps: &[Endpoint]) -> u64 {
    let mut h = DefaultHasher::new();
    svc.hash(&mut h);
    eps.hash(&mut h);
    h.finish()
}

/// A port's inputs in this sync.
pub(super) struct Inputs<'a> {
    pub(super) service: &'a Arc<ServicePort>,
    pub(super) endpoints: Option<&'a Endpoints>,
    pub(super) hash: u64,
}

impl<'a> Inputs<'a> {
    /// Hashes only when `prior` was rendered from other objects: most ports of a sync are the very
    /// objects of the last one (the model shares them), and hashing every port at every sync showed in
    /// the sync time (docs/proxy-daemon.md, "What happens", incremental sync).
    pub(super) fn new(
        service: &'a Arc<ServicePort>,
        endpoints: Option<&'a Endpoints>,
        prior: Option<&Summary>,
    ) -> Inputs<'a> {
        let same = prior.filter(|p| {
            Arc::ptr_eq(&p.service, service)
                && match (&p.endpoints, endpoints) {
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    (None, None) => true,
                    _ => false,
                }
        });
        let hash = match same {
            Some(p) => p.inputs,
            None => inputs_hash(service, endpoints.map_or(&[], |e| &e[..])),
        };
        Inputs {
            service,
            endpoints,
            hash,
        }
    }
}
