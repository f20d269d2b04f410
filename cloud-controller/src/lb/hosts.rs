//! Which nodes back a load balancer, and which GCE instance each one is.
//!
//! Predicates follow k8s.io/cloud-provider's service controller `stableNodeSetPredicates` (the
//! StableLoadBalancerNodeSet behaviour, GA since 1.30): a node is a target pool member unless it is
//! being deleted, carries `node.kubernetes.io/exclude-from-external-load-balancers` (a value that
//! parses as false keeps it in; anything else, including a non-boolean value, excludes it), or has
//! the cluster autoscaler's `ToBeDeletedByClusterAutoscaler` taint. Readiness and
//! `spec.unschedulable` are deliberately NOT predicates any more: the LB health check takes a
//! broken node out, and churning the pool on every readiness flap is what KEP-3458 removed.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;

use crate::config::Config;
use crate::objects::action::Action;
use crate::objects::{self, parse_provider_id};

pub(crate) const EXCLUDE_LB_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";
pub(crate) const TO_BE_DELETED_TAINT: &str = "ToBeDeletedByClusterAutoscaler";
/// Upstream maxInstancesPerInstanceGroup: groups keep the first 1000 nodes by name.
pub(crate) const MAX_INSTANCES_PER_GROUP: usize = 1000;

/// A target pool member.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LbHost {
    pub zone: String,
    pub instance: String,
}

/// Go's strconv.ParseBool.
fn parse_go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

pub(crate) fn node_is_eligible(node: &Node) -> bool {
    if node.metadata.deletion_timestamp.is_some() {
        return false;
    }
    if let Some(v) = node
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(EXCLUDE_LB_LABEL))
        && parse_go_bool(v) != Some(false)
    {
        return false;
    }
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == TO_BE_DELETED_TAINT));
    !tainted
}

/// Eligible nodes mapped to instances via `spec.providerID`. Nodes without a usable providerID
/// (not initialised yet) cannot be placed in a pool; they are returned by name in the second list
/// so the caller can log them and retry after the node controller has run.
pub(crate) fn lb_hosts(nodes: &[Node]) -> (Vec<LbHost>, Vec<String>) {
    let mut hosts = Vec::new();
    let mut skipped = Vec::new();
    for node in nodes.iter().filter(|n| node_is_eligible(n)) {
        let provider_id = node
            .spec
            .as_ref()
            .and_then(|s| s.provider_id.as_deref())
            .unwrap_or("");
        match parse_provider_id(provider_id) {
            Some(id) => hosts.push(LbHost {
                zone: id.zone,
                instance: id.instance,
            }),
            None => skipped.push(node.metadata.name.clone().unwrap_or_default()),
        }
    }
    hosts.sort();
    hosts.dedup();
    (hosts, skipped)
}

/// Members of the per-zone instance groups every backend-service LB (internal and RBS) shares:
/// zone -> the instance URLs of the first [`MAX_INSTANCES_PER_GROUP`] hosts there by name.
pub(crate) fn instance_groups(hosts: &[LbHost], cfg: &Config) -> BTreeMap<String, Vec<String>> {
    let mut by_zone: BTreeMap<String, Vec<&LbHost>> = BTreeMap::new();
    for h in hosts {
        by_zone.entry(h.zone.clone()).or_default().push(h);
    }
    by_zone
        .into_iter()
        .map(|(zone, mut hs)| {
            hs.sort_by(|a, b| a.instance.cmp(&b.instance));
            hs.dedup();
            hs.truncate(MAX_INSTANCES_PER_GROUP);
            let urls = hs
                .iter()
                .map(|h| cfg.instance_url(&h.zone, &h.instance))
                .collect();
            (zone, urls)
        })
        .collect()
}

/// The shared per-zone groups `group` and their members against what GCE holds (`have`): a
/// create per missing zone, one remove and one add call per zone.
pub(crate) fn plan_group_members(
    want_groups: &BTreeMap<String, Vec<String>>,
    have_groups: &BTreeMap<String, Vec<String>>,
    group: &str,
    actions: &mut Vec<Action>,
) {
    for (zone, want) in want_groups {
        let have = match have_groups.get(zone) {
            Some(have) => have.clone(),
            None => {
                actions.push(Action::CreateInstanceGroup {
                    zone: zone.clone(),
                    name: group.to_owned(),
                });
                Vec::new()
            }
        };
        let have_keys: BTreeSet<&str> = have.iter().map(|l| objects::instance_key(l)).collect();
        let want_keys: BTreeSet<&str> = want.iter().map(|l| objects::instance_key(l)).collect();
        let remove: Vec<String> = have
            .iter()
            .filter(|l| !want_keys.contains(objects::instance_key(l)))
            .cloned()
            .collect();
        let add: Vec<String> = want
            .iter()
            .filter(|l| !have_keys.contains(objects::instance_key(l)))
            .cloned()
            .collect();
        if !remove.is_empty() {
            actions.push(Action::RemoveGroupInstances {
                zone: zone.clone(),
                group: group.to_owned(),
                instances: remove,
            });
        }
        if !add.is_empty() {
            actions.push(Action::AddGroupInstances {
                zone: zone.clone(),
                group: group.to_owned(),
                instances: add,
            });
        }
    }
}
