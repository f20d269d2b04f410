//! Which endpoints a service port uses on this node: upstream's CategorizeEndpoints (traffic policies,
//! terminating-endpoint fallback, same-node then same-zone topology hints).

use super::{Endpoint, NodeFacts, ServicePort};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Categorized {
    /// Endpoints for Cluster traffic policy.
    pub cluster: Vec<Endpoint>,
    /// Endpoints for Local traffic policy.
    pub local: Vec<Endpoint>,
    /// Union of the two, sorted by `ip:port`: these get KUBE-SEP chains.
    pub all_reachable: Vec<Endpoint>,
    /// True if the service has any usable endpoint anywhere in the cluster.
    pub has_any: bool,
    /// Which topology filter was applied to cluster endpoints, for `explain`.
    pub topology: Topology,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Topology {
    #[default]
    None,
    SameNode,
    SameZone,
}

fn topology_mode(endpoints: &[Endpoint], node: &NodeFacts) -> Topology {
    let zone = node.zone().unwrap_or("");
    let (mut all_node_hints, mut has_for_node) = (true, false);
    let (mut all_zone_hints, mut has_for_zone) = (true, false);
    for ep in endpoints.iter().filter(|e| e.ready) {
        if ep.node_hints().is_empty() {
            all_node_hints = false;
        } else if ep.node_hints().contains(&node.name) {
            has_for_node = true;
        }
        if ep.zone_hints().is_empty() {
            all_zone_hints = false;
        } else if !zone.is_empty() && ep.zone_hints().iter().any(|z| z == zone) {
            has_for_zone = true;
        }
    }
    if all_node_hints && has_for_node {
        Topology::SameNode
    } else if all_zone_hints && has_for_zone {
        Topology::SameZone
    } else {
        Topology::None
    }
}

fn available(ep: &Endpoint, mode: Topology, node: &NodeFacts) -> bool {
    match mode {
        Topology::None => true,
        Topology::SameNode => ep.node_hints().contains(&node.name),
        Topology::SameZone => node
            .zone()
            .is_some_and(|z| ep.zone_hints().iter().any(|h| h == z)),
    }
}

pub fn categorize(endpoints: &[Endpoint], svc: &ServicePort, node: &NodeFacts) -> Categorized {
    let mut out = Categorized::default();
    if svc.uses_cluster_endpoints() {
        out.topology = topology_mode(endpoints, node);
        out.cluster = endpoints
            .iter()
            .filter(|e| e.ready && available(e, out.topology, node))
            .cloned()
            .collect();
        if out.cluster.is_empty() {
            // Best effort to not drop connections: fall back to serving terminating endpoints,
            // ignoring topology.
            out.cluster = endpoints
                .iter()
                .filter(|e| e.serving && e.terminating)
                .cloned()
                .collect();
        }
        out.has_any = !out.cluster.is_empty();
    }
    if !svc.uses_local_endpoints() {
        out.all_reachable = out.cluster.clone();
        return out;
    }
    let (mut local_ready, mut local_terminating) = (false, false);
    for ep in endpoints {
        if ep.ready {
            out.has_any = true;
            local_ready |= ep.is_local(&node.name);
        } else if ep.serving && ep.terminating {
            out.has_any = true;
            local_terminating |= ep.is_local(&node.name);
        }
    }
    if local_ready {
        out.local = endpoints
            .iter()
            .filter(|e| e.is_local(&node.name) && e.ready)
            .cloned()
            .collect();
    } else if local_terminating {
        out.local = endpoints
            .iter()
            .filter(|e| e.is_local(&node.name) && e.serving && e.terminating)
            .cloned()
            .collect();
    }
    if !svc.uses_cluster_endpoints() {
        out.all_reachable = out.local.clone();
        return out;
    }
    let mut all: Vec<Endpoint> = out.cluster.iter().chain(out.local.iter()).cloned().collect();
    all.sort_by_key(|e| e.addr());
    all.dedup_by_key(|e| e.addr());
    out.all_reachable = all;
    out
}
