//! Incremental rendering: between syncs most service ports do not change, so the daemon's [`Renderer`]
//! keeps each port's rules with a hash of what they were rendered from, and renders again only the
//! ports whose service, endpoints or context changed. Reused rules are shared (`Arc`) with the
//! previous [`Rendered`], which is how a partial sync finds the unchanged ones without reading them.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::service::{self, Ctx, ServiceRules};
use super::{LARGE_CLUSTER_ENDPOINTS, Rendered, assemble};
use crate::config::RenderConfig;
use crate::model::{Endpoint, NodeFacts, ProxyState, ServicePort, ServicePortName, categorize};

/// The render cache of one IP family.
#[derive(Debug, Default)]
pub struct Renderer {
    /// Everything besides a port's own inputs that its rules depend on (config, node facts,
    /// large-cluster mode); when it changes every port is rendered again.
    context: String,
    ports: HashMap<ServicePortName, Cached>,
}

#[derive(Debug)]
struct Cached {
    inputs: u64,
    rules: Arc<ServiceRules>,
}

/// SipHash of a port and its endpoints (fixed keys, so equal inputs always hash equal). A 64-bit
/// collision between two versions of the same port is the only way to reuse stale rules.
fn inputs_hash(svc: &ServicePort, eps: &[Endpoint]) -> u64 {
    let mut h = DefaultHasher::new();
    svc.hash(&mut h);
    eps.hash(&mut h);
    h.finish()
}

impl Renderer {
    /// Renders the whole ruleset, reusing the rules of every port whose inputs did not change.
    pub fn render(&mut self, state: &ProxyState, node: &NodeFacts, cfg: &RenderConfig) -> Rendered {
        let total_endpoints: usize = state
            .services
            .keys()
            .filter_map(|k| state.endpoints.get(k))
            .map(|e| e.len())
            .sum();
        let ctx = Ctx {
            cfg,
            node,
            large_cluster: total_endpoints > LARGE_CLUSTER_ENDPOINTS,
            local_detector: cfg.local_detector(),
        };
        let context = format!("{cfg:?}|{node:?}|{}", ctx.large_cluster);
        if context != self.context {
            self.ports.clear();
            self.context = context;
        }
        let mut previous = std::mem::take(&mut self.ports);
        let empty = crate::model::Endpoints::default();
        let mut per_service = Vec::with_capacity(state.services.len());
        for (name, svc) in &state.services {
            let eps = state.endpoints.get(name).unwrap_or(&empty);
            let inputs = inputs_hash(svc, eps);
            let rules = match previous.remove(name) {
                Some(c) if c.inputs == inputs => c.rules,
                _ => Arc::new(service::render_service_port(
                    svc,
                    &categorize(eps, svc, node),
                    &ctx,
                )),
            };
            self.ports.insert(
                name.clone(),
                Cached {
                    inputs,
                    rules: Arc::clone(&rules),
                },
            );
            per_service.push((name.clone(), rules));
        }
        assemble(per_service, node, cfg, total_endpoints)
    }
}

#[cfg(test)]
mod tests;
