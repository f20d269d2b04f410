//! Route controller, pure part (k8s.io/cloud-provider route controller + gce_routes.go): one GCE
//! route per node pod CIDR pointing at the node's instance, stale routes of our prefix deleted,
//! and the NetworkUnavailable condition each node should then carry.

use std::collections::BTreeSet;

use ipnet::IpNet;
use k8s_openapi::api::core::v1::Node;
use serde_json::{Value, json};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::gce::{self, Route};
use crate::naming::{self, ROUTE_DESCRIPTION};
use crate::nodes::parse_provider_id;

pub const ROUTE_PRIORITY: u32 = 1000;
pub const CONDITION_NETWORK_UNAVAILABLE: &str = "NetworkUnavailable";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkCondition {
    pub node: String,
    /// "False" with reason RouteCreated, or "True" with NoRouteCreated.
    pub status: &'static str,
    pub reason: &'static str,
    pub message: &'static str,
}

impl NetworkCondition {
    fn created(node: &str) -> Self {
        NetworkCondition {
            node: node.to_owned(),
            status: "False",
            reason: "RouteCreated",
            message: "RouteController created a route",
        }
    }

    /// What to write when creating the node's route failed.
    pub fn failed(node: &str) -> Self {
        NetworkCondition {
            node: node.to_owned(),
            status: "True",
            reason: "NoRouteCreated",
            message: "RouteController failed to create a route",
        }
    }

    /// Strategic merge patch for the node status subresource (conditions merge by `type`).
    /// `now` is an RFC 3339 timestamp.
    pub fn status_patch(&self, now: &str) -> Value {
        json!({ "status": { "conditions": [{
            "type": CONDITION_NETWORK_UNAVAILABLE,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": now,
            "lastHeartbeatTime": now,
        }]}})
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoutePlan {
    /// Deleted first: a changed CIDR reuses the route name.
    pub delete: Vec<String>,
    pub create: Vec<Route>,
    /// To write once the creates succeeded (only where the node's condition differs).
    pub conditions: Vec<NetworkCondition>,
    /// Nodes that could not get a route (bad pod CIDR, no providerID, invalid name); the rest of
    /// the plan is still valid.
    pub errors: Vec<Error>,
}

/// The route a node should have. Upstream routes one pod CIDR per node; svcnet takes the first
/// IPv4 one of spec.podCIDRs (else spec.podCIDR): GCE instance next-hop routes are IPv4.
pub fn desired_route(node: &Node, cfg: &Config) -> Result<Option<Route>> {
    let name = node.metadata.name.clone().unwrap_or_default();
    let object = format!("Node {name}");
    let spec = node.spec.clone().unwrap_or_default();
    let cidrs = spec
        .pod_cidrs
        .filter(|c| !c.is_empty())
        .or_else(|| spec.pod_cidr.map(|c| vec![c]));
    let Some(cidrs) = cidrs else { return Ok(None) };
    let mut v4 = None;
    for cidr in &cidrs {
        let net: IpNet = cidr.parse().map_err(|_| Error::InvalidPodCidr {
            object: object.clone(),
            field: "spec.podCIDRs".into(),
            value: cidr.clone(),
        })?;
        if v4.is_none() && matches!(net, IpNet::V4(_)) {
            v4 = Some(net.trunc());
        }
    }
    let Some(dest) = v4 else { return Ok(None) };
    let provider_id = spec.provider_id.unwrap_or_default();
    let Some(id) = parse_provider_id(&provider_id) else {
        return Err(Error::InvalidProviderId {
            object,
            field: "spec.providerID".into(),
            value: provider_id,
        });
    };
    let uid = node.metadata.uid.clone().unwrap_or_default();
    let route_name = naming::route_name(&cfg.cluster_name, &uid);
    naming::validate_gce_name(&route_name, &object, "metadata.uid (route name)")?;
    Ok(Some(Route {
        name: route_name,
        description: ROUTE_DESCRIPTION.to_owned(),
        dest_range: dest.to_string(),
        next_hop_instance: cfg.instance_url(&id.zone, &id.instance),
        network: cfg.network_url(),
        priority: ROUTE_PRIORITY,
    }))
}

fn same_route(a: &Route, b: &Route) -> bool {
    gce::instance_key(&a.next_hop_instance) == gce::instance_key(&b.next_hop_instance)
        && normalize(&a.dest_range) == normalize(&b.dest_range)
}

fn normalize(cidr: &str) -> String {
    cidr.parse::<IpNet>()
        .map(|n| n.trunc().to_string())
        .unwrap_or_else(|_| cidr.to_owned())
}

/// Upstream isResponsibleForRoute: with cluster CIDRs configured, only routes inside them.
fn responsible(cfg: &Config, route: &Route) -> bool {
    if cfg.cluster_cidrs.is_empty() {
        return true;
    }
    route
        .dest_range
        .parse::<IpNet>()
        .is_ok_and(|net| cfg.cluster_cidrs.iter().any(|c| c.contains(&net)))
}

fn has_route_created(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == CONDITION_NETWORK_UNAVAILABLE))
        .is_some_and(|c| c.status == "False" && c.reason.as_deref() == Some("RouteCreated"))
}

/// `existing`: routes.list result; only routes with our prefix, our description and our network
/// are considered ours (upstream's list filter), the rest are ignored.
pub fn plan_routes(nodes: &[Node], existing: &[Route], cfg: &Config) -> RoutePlan {
    let mut plan = RoutePlan::default();
    let prefix = naming::route_prefix(&cfg.cluster_name);
    let ours: Vec<&Route> = existing
        .iter()
        .filter(|r| {
            r.name.starts_with(&prefix)
                && r.description == ROUTE_DESCRIPTION
                && gce::same_link(&r.network, &cfg.network_url())
        })
        .collect();

    let mut wanted: Vec<(&Node, Route)> = Vec::new();
    for node in nodes {
        match desired_route(node, cfg) {
            Ok(Some(route)) => wanted.push((node, route)),
            Ok(None) => {}
            Err(e) => plan.errors.push(e),
        }
    }
    let wanted_names: BTreeSet<&str> = wanted.iter().map(|(_, r)| r.name.as_str()).collect();

    for route in &ours {
        let matched = wanted.iter().any(|(_, w)| same_route(w, route));
        // A route squatting a name we need must go even outside the cluster CIDRs.
        if !matched && (responsible(cfg, route) || wanted_names.contains(route.name.as_str())) {
            plan.delete.push(route.name.clone());
        }
    }
    for (node, want) in &wanted {
        if !ours.iter().any(|r| same_route(want, r)) {
            plan.create.push(want.clone());
        }
        if !has_route_created(node) {
            plan.conditions.push(NetworkCondition::created(
                node.metadata.name.as_deref().unwrap_or(""),
            ));
        }
    }
    plan.delete.sort();
    plan.delete.dedup();
    plan
}

#[cfg(test)]
mod tests;
