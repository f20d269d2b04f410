//! `kubeproxy_sync_proxy_rules_no_local_endpoints_total` in the maps layout: the service ports with a
//! Local traffic policy whose endpoints are all on other nodes, counted as upstream's nftables
//! proxier counts them (a port without any endpoint is rejected, not counted). Kept per port as the
//! ports change, so a sync costs the changed ports only.

use std::collections::BTreeMap;

use crate::model::{Endpoint, NodeFacts, ServicePort, ServicePortName, categorize};
use crate::nftables::render::NoLocal;

/// The ports that count, with what they count for.
#[derive(Debug, Default)]
pub(super) struct NoLocalPorts(BTreeMap<ServicePortName, Flags>);

/// (internal, external): the port's policy is Local and it has endpoints, none of them local.
type Flags = (bool, bool);

impl NoLocalPorts {
    /// Records `port` as it is now (`None`: gone).
    pub(super) fn set(
        &mut self,
        name: &ServicePortName,
        port: Option<(&ServicePort, &[Endpoint])>,
        node: &NodeFacts,
    ) {
        match port.map(|(svc, eps)| flags(svc, eps, node)) {
            Some(f @ ((true, _) | (_, true))) => {
                self.0.insert(name.clone(), f);
            }
            _ => {
                self.0.remove(name);
            }
        }
    }

    pub(super) fn total(&self) -> NoLocal {
        let mut out = NoLocal::default();
        for &(internal, external) in self.0.values() {
            out.internal += usize::from(internal);
            out.external += usize::from(external);
        }
        out
    }
}

/// Upstream's decision: no local endpoint counts only where endpoints exist and the policy is Local.
fn flags(svc: &ServicePort, eps: &[Endpoint], node: &NodeFacts) -> Flags {
    let cat = categorize(eps, svc, node);
    let missing = cat.has_any && cat.local.is_empty();
    (
        missing && svc.internal_policy_local,
        missing && svc.external_policy_local,
    )
}

#[cfg(test)]
mod tests;
