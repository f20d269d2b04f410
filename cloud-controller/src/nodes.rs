//! Node controller, pure part (k8s.io/cloud-provider cloud node + node lifecycle controllers with
//! the GCE instance facts): initialise nodes tainted `node.cloudprovider.kubernetes.io/uninitialized`
//! and delete NotReady nodes whose instance is gone.
//!
//! Never imports: crate::lb, crate::routes, crate::gce, crate::controllers.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeAddress, Taint};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::objects::{InstanceFacts, InstanceLookup, ProviderId, parse_provider_id};

pub(crate) const UNINITIALIZED_TAINT: &str = "node.cloudprovider.kubernetes.io/uninitialized";
/// Set by kubelet --node-ip when running with an external cloud provider.
pub(crate) const PROVIDED_NODE_IP_ANNOTATION: &str = "alpha.kubernetes.io/provided-node-ip";
pub(crate) const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
pub(crate) const LABEL_REGION: &str = "topology.kubernetes.io/region";
pub(crate) const LABEL_INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
/// Upstream still sets the deprecated beta labels next to the GA ones.
pub(crate) const LABEL_ZONE_BETA: &str = "failure-domain.beta.kubernetes.io/zone";
pub(crate) const LABEL_REGION_BETA: &str = "failure-domain.beta.kubernetes.io/region";
pub(crate) const LABEL_INSTANCE_TYPE_BETA: &str = "beta.kubernetes.io/instance-type";

/// Zone `us-central1-a` -> region `us-central1`.
pub(crate) fn region_of_zone(zone: &str) -> &str {
    zone.rsplit_once('-').map_or(zone, |(region, _)| region)
}

/// Everything to write on an uninitialised node, ready to send as two merge patches.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodeInit {
    /// Only when the node has none yet (providerID is immutable once set).
    pub provider_id: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub addresses: Vec<NodeAddress>,
    /// The node's taints without the uninitialized one (merge patches replace lists whole).
    pub taints: Vec<Taint>,
}

impl NodeInit {
    /// Merge patch for the node object (metadata.labels, spec.providerID, spec.taints).
    pub(crate) fn spec_patch(&self) -> Value {
        let mut spec = json!({ "taints": self.taints });
        if let (Some(id), Some(obj)) = (&self.provider_id, spec.as_object_mut()) {
            obj.insert("providerID".into(), Value::String(id.clone()));
        }
        json!({ "metadata": { "labels": self.labels }, "spec": spec })
    }

    /// Merge patch for the status subresource.
    pub(crate) fn status_patch(&self) -> Value {
        json!({ "status": { "addresses": self.addresses } })
    }
}

fn node_object(node: &Node) -> String {
    format!("Node {}", node.metadata.name.as_deref().unwrap_or(""))
}

pub(crate) fn needs_initialization(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == UNINITIALIZED_TAINT))
}

fn address(type_: &str, address: &str) -> NodeAddress {
    NodeAddress {
        type_: type_.into(),
        address: address.into(),
    }
}

/// The instance's addresses as cloud-provider-gcp orders them (IPv4 internal and external, then the
/// NIC's IPv6 as an InternalIP), kubelet's Hostname, and the `--node-ip` ones first: one address, or a
/// dual-stack pair (KEP-3705), each of which must be an address of the instance.
fn node_addresses(node: &Node, facts: &InstanceFacts, object: &str) -> Result<Vec<NodeAddress>> {
    let is_v6 = |ip: &&String| ip.contains(':');
    let mut addresses: Vec<NodeAddress> = facts
        .internal_ips
        .iter()
        .filter(|ip| !is_v6(ip))
        .map(|ip| address("InternalIP", ip))
        .chain(facts.external_ips.iter().map(|ip| address("ExternalIP", ip)))
        .chain(
            facts
                .internal_ips
                .iter()
                .filter(is_v6)
                .map(|ip| address("InternalIP", ip)),
        )
        .collect();
    // The cloud reports no hostname: keep the one kubelet published (as upstream does).
    let existing = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.clone())
        .unwrap_or_default();
    addresses.extend(existing.into_iter().filter(|a| a.type_ == "Hostname"));
    let Some(provided) = node
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(PROVIDED_NODE_IP_ANNOTATION))
    else {
        return Ok(addresses);
    };
    let bad = |message: String| Error::InvalidNodeAddress {
        object: object.to_owned(),
        field: format!("metadata.annotations[{PROVIDED_NODE_IP_ANNOTATION}]"),
        message,
    };
    let wanted: Vec<&str> = provided.split(',').map(str::trim).collect();
    if wanted.len() > 2 {
        return Err(bad(format!("{provided:?} names more than two addresses")));
    }
    // The last one first, so that each goes in front of those after it.
    for ip in wanted.iter().rev() {
        let Some(pos) = addresses.iter().position(|a| same_ip(&a.address, ip)) else {
            return Err(bad(format!(
                "{ip:?} is not an address of instance {}",
                facts.name
            )));
        };
        let a = addresses.remove(pos);
        addresses.insert(0, a);
    }
    Ok(addresses)
}

/// Whether two address strings name one IP (an IPv6 address has many spellings).
fn same_ip(a: &str, b: &str) -> bool {
    match (a.parse::<std::net::IpAddr>(), b.parse::<std::net::IpAddr>()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

pub(crate) fn plan_node_init(node: &Node, facts: &InstanceFacts) -> Result<NodeInit> {
    let object = node_object(node);
    let spec = node.spec.clone().unwrap_or_default();
    let provider_id = match spec.provider_id.as_deref() {
        Some(id) if !id.is_empty() => {
            if parse_provider_id(id).is_none() {
                return Err(Error::InvalidProviderId {
                    object,
                    field: "spec.providerID".into(),
                    value: id.into(),
                });
            }
            None
        }
        _ => Some(
            ProviderId {
                project: facts.project.clone(),
                zone: facts.zone.clone(),
                instance: facts.name.clone(),
            }
            .format(),
        ),
    };

    let addresses = node_addresses(node, facts, &object)?;

    let machine_type = crate::objects::link_name(&facts.machine_type).to_owned();
    let region = region_of_zone(&facts.zone).to_owned();
    let mut labels = node.metadata.labels.clone().unwrap_or_default();
    for (k, v) in [
        (LABEL_INSTANCE_TYPE, &machine_type),
        (LABEL_INSTANCE_TYPE_BETA, &machine_type),
        (LABEL_ZONE, &facts.zone),
        (LABEL_ZONE_BETA, &facts.zone),
        (LABEL_REGION, &region),
        (LABEL_REGION_BETA, &region),
    ] {
        if !v.is_empty() {
            labels.insert(k.to_owned(), v.clone());
        }
    }

    let taints = spec
        .taints
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.key != UNINITIALIZED_TAINT)
        .collect();
    Ok(NodeInit {
        provider_id,
        labels,
        addresses,
        taints,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LifecycleAction {
    Keep,
    /// Delete the Node object: NotReady and its VM is gone.
    Delete,
}

/// Whether the node's Ready condition is True (a missing condition counts as not ready).
pub(crate) fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

/// Upstream cloud node lifecycle controller: only NotReady nodes are checked, and deleted when the
/// instance no longer exists. A Ready node is never deleted, whatever the cloud says.
pub(crate) fn plan_node_lifecycle(node: &Node, lookup: InstanceLookup) -> LifecycleAction {
    if !node_ready(node) && lookup == InstanceLookup::NotFound {
        LifecycleAction::Delete
    } else {
        LifecycleAction::Keep
    }
}

#[cfg(test)]
mod tests;
