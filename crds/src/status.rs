//! Observed side of a `CloudLoadBalancer`: what GCE holds for the Service.
//!
//! Fields that are empty are left out of the JSON, so write the status with server-side apply
//! (`apply_patch`) or a full status replace: a merge patch would keep a field that is now
//! absent, e.g. a cleared `lastError`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ports::{PortStatus, format_ports};

// portsSummary and nodeCount exist only for the printer columns, which cannot join or count
// arrays; set_ports and set_target_pool keep them in sync with the fields they summarise.
/// Observed state: what GCE holds for the Service, and whether it matches.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloudLoadBalancerStatus {
    /// IP address of the forwarding rule (the Service's load balancer ingress IP).
    #[serde(rename = "ingressIP", default, skip_serializing_if = "Option::is_none")]
    pub ingress_ip: Option<String>,

    /// Ports forwarded by the load balancer, in Service port order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["port", "protocol"]))]
    pub ports: Vec<PortStatus>,

    /// The ports preformatted for the PORTS column, e.g. "80/TCP,443/TCP".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports_summary: Option<String>,

    /// Number of instances in the target pool, for the NODES column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_count: Option<i32>,

    /// The GCE objects behind the load balancer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gce: Option<GceResources>,

    /// Ready, Progressing and Failed, in metav1.Condition shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,

    /// metadata.generation this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// When the controller last finished a sync of this load balancer (successful or not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_time: Option<Time>,

    /// Error of the last sync; absent when the last sync succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The GCE objects that make up one load balancer (names as in cloud-provider-gcp).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GceResources {
    /// Regional static address holding the ingress IP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<GceResourceRef>,

    /// Forwarding rule (named like the load balancer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarding_rule: Option<GceResourceRef>,

    /// Target pool and its member instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_pool: Option<TargetPoolStatus>,

    /// Firewall rules: the service rule k8s-fw-<lb> and the health-check rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub firewalls: Vec<GceResourceRef>,

    /// HTTP health checks: the shared node check or the per-service one (externalTrafficPolicy Local).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_checks: Vec<GceResourceRef>,

    /// EXTERNAL (target pool) or INTERNAL (backend service): the forwarding rule's scheme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancing_scheme: Option<String>,

    /// Internal load balancers: the regional backend service (named like the load balancer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_service: Option<GceResourceRef>,

    /// Internal load balancers: the cluster's shared unmanaged instance groups, one per zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instance_groups: Vec<GceResourceRef>,
}

/// Name and URL of one GCE object.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GceResourceRef {
    /// GCE resource name.
    pub name: String,
    /// Full resource URL as GCE returns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
}

/// The target pool and the instances GCE reports in it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetPoolStatus {
    /// GCE resource name.
    pub name: String,
    /// Full resource URL as GCE returns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    /// Instance URLs in the pool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<String>,
}

impl CloudLoadBalancerStatus {
    /// Sets `ports` and the PORTS column text together; no ports clears the text.
    pub fn set_ports(&mut self, ports: Vec<PortStatus>) {
        self.ports_summary = (!ports.is_empty()).then(|| format_ports(&ports));
        self.ports = ports;
    }

    /// Sets the target pool and the NODES column together; no pool clears the count.
    pub fn set_target_pool(&mut self, pool: Option<TargetPoolStatus>) {
        // A pool cannot hold anywhere near i32::MAX instances; saturate rather than fail.
        self.node_count = pool
            .as_ref()
            .map(|p| i32::try_from(p.instances.len()).unwrap_or(i32::MAX));
        self.gce.get_or_insert_with(GceResources::default).target_pool = pool;
    }
}

#[cfg(test)]
mod tests;
