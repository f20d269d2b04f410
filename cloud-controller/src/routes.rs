//! Route controller, pure part (k8s.io/cloud-provider route controller + gce_routes.go): one GCE
//! route per node pod CIDR pointing at the node's instance, stale routes of our prefix deleted,
//! and the NetworkUnavailable condition each node should then carry.
//!
//! Never imports: crate::lb, crate::nodes, crate::gce, crate::controllers.

use std::collections::{BTreeMap, BTreeSet};

use ipnet::IpNet;
use k8s_openapi::api::core::v1::Node;
use serde_json::{Value, json};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::naming::{self, ROUTE_DESCRIPTION};
use crate::objects::parse_provider_id;
use crate::objects::{self, Route};

pub(crate) const ROUTE_PRIORITY: u32 = 1000;
pub(crate) const CONDITION_NETWORK_UNAVAILABLE: &str = "NetworkUnavailable";

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NetworkCondition {
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
    pub(crate) fn failed(node: &str) -> Self {
        NetworkCondition {
            node: node.to_owned(),
            status: "True",
            reason: "NoRouteCreated",
            message: "RouteController failed to create a route",
        }
    }

    /// Strategic merge patch for the node status subresource (conditions merge by `type`).
    /// `now` is an RFC 3339 timestamp.
    pub(crate) fn status_patch(&self, now: &str) -> Value {
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
pub(crate) struct RoutePlan {
    /// Deleted first: a changed CIDR reuses the route name.
    pub delete: Vec<String>,
    pub create: Vec<Route>,
    /// To write once the creates succeeded (only where the node's condition differs).
    pub conditions: Vec<NetworkCondition>,
    /// Nodes that could not get a route (bad pod CIDR, no providerID and no instance of its name
    /// in the cluster's zones, invalid name); the rest of the plan is still valid.
    pub errors: Vec<Error>,
}

/// Where the instances of nodes without a GCE providerID were found: node name -> zone. The
/// I/O layer fills it for [`nodes_to_locate`] the way upstream's CreateRoute does
/// (getInstanceByName in providers/gce/gce_instances.go: instances.get by name in each of the
/// cluster's zones in turn, 404 = try the next).
pub(crate) type Located = BTreeMap<String, String>;

/// The GCE instance name for a node name: upstream's canonicalizeInstanceName cuts a
/// `name.c.project.internal` hostname at the first dot.
pub(crate) fn instance_name(node_name: &str) -> &str {
    node_name.split_once('.').map_or(node_name, |(name, _)| name)
}

/// The node's pod CIDR to route (first IPv4 one), None when it has none.
fn route_cidr(node: &Node, object: &str) -> Result<Option<IpNet>> {
    let spec = node.spec.clone().unwrap_or_default();
    let cidrs = spec
        .pod_cidrs
        .filter(|c| !c.is_empty())
        .or_else(|| spec.pod_cidr.map(|c| vec![c]));
    let Some(cidrs) = cidrs else { return Ok(None) };
    let mut v4 = None;
    for cidr in &cidrs {
        let net: IpNet = cidr.parse().map_err(|_| Error::InvalidPodCidr {
            object: object.to_owned(),
            field: "spec.podCIDRs".into(),
            value: cidr.clone(),
        })?;
        if v4.is_none() && matches!(net, IpNet::V4(_)) {
            v4 = Some(net.trunc());
        }
    }
    Ok(v4)
}

/// Nodes that need a route but carry no (valid) providerID and whose route does not exist yet:
/// their instance must be looked up by name (see [`Located`]). A node whose route already
/// exists is not looked up again.
pub(crate) fn nodes_to_locate(nodes: &[Node], existing: &[Route], cfg: &Config) -> Vec<String> {
    let mut out = Vec::new();
    for node in nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        let has_id = node
            .spec
            .as_ref()
            .and_then(|s| s.provider_id.as_deref())
            .and_then(parse_provider_id)
            .is_some();
        if has_id || name.is_empty() {
            continue;
        }
        let Ok(Some(dest)) = route_cidr(node, &format!("Node {name}")) else {
            continue;
        };
        let route_name = naming::route_name(&cfg.cluster_name, node.metadata.uid.as_deref().unwrap_or(""));
        let present = existing
            .iter()
            .any(|r| r.name == route_name && normalize(&r.dest_range) == dest.to_string());
        if !present {
            out.push(name);
        }
    }
    out
}

/// The route a node should have. Upstream routes one pod CIDR per node; svcnet takes the first
/// IPv4 one of spec.podCIDRs (else spec.podCIDR): GCE instance next-hop routes are IPv4. The
/// next hop is the instance of spec.providerID, else the one found by name (`located`).
pub(crate) fn desired_route(node: &Node, cfg: &Config, located: &Located) -> Result<Option<Route>> {
    let name = node.metadata.name.clone().unwrap_or_default();
    let object = format!("Node {name}");
    let Some(dest) = route_cidr(node, &object)? else {
        return Ok(None);
    };
    let provider_id = node
        .spec
        .as_ref()
        .and_then(|s| s.provider_id.clone())
        .unwrap_or_default();
    let (zone, instance) = match (parse_provider_id(&provider_id), located.get(&name)) {
        (Some(id), _) => (id.zone, id.instance),
        (None, Some(zone)) => (zone.clone(), instance_name(&name).to_owned()),
        (None, None) => {
            return Err(Error::InvalidProviderId {
                object,
                field: "spec.providerID".into(),
                value: provider_id,
            });
        }
    };
    let uid = node.metadata.uid.clone().unwrap_or_default();
    let route_name = naming::route_name(&cfg.cluster_name, &uid);
    naming::validate_gce_name(&route_name, &object, "metadata.uid (route name)")?;
    Ok(Some(Route {
        name: route_name,
        description: ROUTE_DESCRIPTION.to_owned(),
        dest_range: dest.to_string(),
        next_hop_instance: cfg.instance_url(&zone, &instance),
        network: cfg.network_url(),
        priority: ROUTE_PRIORITY,
    }))
}

/// The existing route named for `node` (a node without providerID, not looked up this time).
fn existing_route_of(node: &Node, ours: &[&Route], cfg: &Config) -> Option<Route> {
    let name = naming::route_name(&cfg.cluster_name, node.metadata.uid.as_deref()?);
    ours.iter().find(|r| r.name == name).map(|r| (*r).clone())
}

fn same_route(a: &Route, b: &Route) -> bool {
    objects::instance_key(&a.next_hop_instance) == objects::instance_key(&b.next_hop_instance)
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
/// are considered ours (upstream's list filter), the rest are ignored. `located`: instances of
/// nodes without providerID (see [`nodes_to_locate`]); such a node whose route exists already
/// keeps it.
pub(crate) fn plan_routes(nodes: &[Node], existing: &[Route], cfg: &Config, located: &Located) -> RoutePlan {
    let mut plan = RoutePlan::default();
    let prefix = naming::route_prefix(&cfg.cluster_name);
    let ours: Vec<&Route> = existing
        .iter()
        .filter(|r| {
            r.name.starts_with(&prefix)
                && r.description == ROUTE_DESCRIPTION
                && objects::same_link(&r.network, &cfg.network_url())
        })
        .collect();

    let mut wanted: Vec<(&Node, Route)> = Vec::new();
    let to_locate = nodes_to_locate(nodes, existing, cfg);
    for node in nodes {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let route = match desired_route(node, cfg, located) {
            // No providerID and not looked up because its route exists: keep that route (its
            // next hop was found by name when it was created).
            Err(e @ Error::InvalidProviderId { .. }) if !to_locate.iter().any(|n| n == name) => {
                existing_route_of(node, &ours, cfg).ok_or(e).map(Some)
            }
            other => other,
        };
        match route {
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
