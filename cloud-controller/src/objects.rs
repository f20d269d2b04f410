//! GCE objects as plain data, the leaf both planning (`lb`, `routes`, `nodes`) and I/O (`gce`)
//! stand on: mirrors of the Compute v1 REST resources the controller writes, the calls on them
//! ([`action`]) and what GCE was seen to hold ([`observed`]). Field names follow the REST JSON
//! (serde renames), so the I/O layer maps them 1:1 onto google-cloud-compute-v1 models and the fake
//! GCE can read them directly. Only the fields the controller sets or compares are here.
//!
//! Never imports: crate::lb, crate::routes, crate::nodes, crate::gce, crate::controllers.

use serde::{Deserialize, Serialize};

pub(crate) mod action;
pub(crate) mod observed;

/// GCE `networkTier` values as the API spells them.
pub(crate) const TIER_PREMIUM: &str = "PREMIUM";
pub(crate) const TIER_STANDARD: &str = "STANDARD";
/// Target pool `sessionAffinity` values.
pub(crate) const AFFINITY_NONE: &str = "NONE";
pub(crate) const AFFINITY_CLIENT_IP: &str = "CLIENT_IP";
/// `loadBalancingScheme` (forwarding rules, backend services) and `addressType` of internal LBs;
/// external ones leave both empty (GCE defaults EXTERNAL).
pub(crate) const SCHEME_INTERNAL: &str = "INTERNAL";
/// The scheme backend-service (RBS) network load balancers send explicitly (ingress-gce does).
pub(crate) const SCHEME_EXTERNAL: &str = "EXTERNAL";

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Address {
    pub name: String,
    pub description: String,
    /// None on insert lets GCE pick; Some(ip) reserves (or promotes) that IP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Empty for internal addresses (upstream sets no tier on them).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub network_tier: String,
    /// EXTERNAL (GCE's default, empty here when not sent) or INTERNAL.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub address_type: String,
    /// Subnetwork URL of an INTERNAL address, or of an IPv6 one (its range holds the /96).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subnetwork: String,
    /// IPV6 for an IPv6 address; empty (GCE's IPV4 default) otherwise.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ip_version: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct FirewallAllowed {
    #[serde(rename = "IPProtocol")]
    pub ip_protocol: String,
    pub ports: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Firewall {
    pub name: String,
    pub description: String,
    /// Network URL.
    pub network: String,
    pub source_ranges: Vec<String>,
    /// Empty = all destinations (GCE's meaning for ingress rules).
    pub destination_ranges: Vec<String>,
    pub target_tags: Vec<String>,
    pub allowed: Vec<FirewallAllowed>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HttpHealthCheck {
    pub name: String,
    pub description: String,
    pub port: i32,
    pub request_path: String,
    pub check_interval_sec: i32,
    pub timeout_sec: i32,
    pub healthy_threshold: i32,
    pub unhealthy_threshold: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TargetPool {
    pub name: String,
    pub description: String,
    /// Instance URLs.
    pub instances: Vec<String>,
    /// NONE | CLIENT_IP ("" when GCE reports none; upstream never recreates for "").
    pub session_affinity: String,
    /// HTTP health check URLs (a target pool holds at most one).
    pub health_checks: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ForwardingRule {
    pub name: String,
    pub description: String,
    #[serde(rename = "IPAddress")]
    pub ip_address: String,
    #[serde(rename = "IPProtocol")]
    pub ip_protocol: String,
    /// `min-max` of the service ports (external rules).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub port_range: String,
    /// Target pool URL (external rules).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub target: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub network_tier: String,
    /// Backend service URL: svcnet's internal rules, or another controller's backend-service
    /// load balancer (see `lb::ownership`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub backend_service: String,
    /// EXTERNAL (GCE's default, empty when not sent) or INTERNAL.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub load_balancing_scheme: String,
    /// Internal rules: the service ports (at most 5), else `all_ports`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<String>,
    #[serde(skip_serializing_if = "is_false")]
    pub all_ports: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_global_access: bool,
    /// Network and subnetwork URLs (internal rules).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub network: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subnetwork: String,
    /// `IPV6` on an IPv6 rule; GCE's default (IPv4) when empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ip_version: String,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Backend {
    /// Instance group URL.
    pub group: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConnectionDraining {
    pub draining_timeout_sec: i32,
}

/// `networkPassThroughLbTrafficPolicy.zonalAffinity` of a passthrough backend service.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ZonalAffinity {
    /// `ZONAL_AFFINITY_DISABLED` for ingress-gce's NetLB (the ratio stays GCE's default 0).
    pub spillover: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PassThroughTrafficPolicy {
    pub zonal_affinity: ZonalAffinity,
}

/// A regional backend service (internal passthrough load balancer, or RBS network load balancer).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BackendService {
    pub name: String,
    pub description: String,
    pub protocol: String,
    pub session_affinity: String,
    pub load_balancing_scheme: String,
    /// Health check URLs (exactly one).
    pub health_checks: Vec<String>,
    pub backends: Vec<Backend>,
    /// RBS: what ingress-gce sets (internal LBs leave both to GCE's defaults).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_draining: Option<ConnectionDraining>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_pass_through_lb_traffic_policy: Option<PassThroughTrafficPolicy>,
    /// RBS: `WEIGHTED_MAGLEV` for weighted load balancing (ingress-gce backends.go), `MAGLEV`
    /// once it is turned off again; empty leaves GCE's default.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub locality_lb_policy: String,
    /// Optimistic lock: an update carries the fingerprint last read.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HttpHealthCheckSettings {
    pub port: i32,
    pub request_path: String,
}

/// A (non-legacy, global) health check of type HTTP, as internal load balancers use.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HealthCheck {
    pub name: String,
    pub description: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub check_interval_sec: i32,
    pub timeout_sec: i32,
    pub healthy_threshold: i32,
    pub unhealthy_threshold: i32,
    pub http_health_check: HttpHealthCheckSettings,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Route {
    pub name: String,
    pub description: String,
    pub dest_range: String,
    /// Instance URL.
    pub next_hop_instance: String,
    /// Network URL.
    pub network: String,
    pub priority: u32,
}

/// Compare two GCE resource links regardless of the endpoint they were built with: GCE returns full
/// `https://.../compute/v1/projects/...` URLs, the fake GCE another host, upstream sometimes sends
/// relative `zones/z/instances/i`. Everything from `projects/` (else from the scope segment) is
/// the identity.
pub(crate) fn same_link(a: &str, b: &str) -> bool {
    link_key(a) == link_key(b)
}

/// The comparable part of a link (see [`same_link`]).
pub(crate) fn link_key(link: &str) -> &str {
    let link = link.trim_start_matches('/');
    if let Some(i) = link.find("projects/") {
        return &link[i..];
    }
    link
}

/// Instances are compared from `zones/` on, as upstream's `hostURLToComparablePath` does, so a
/// relative `zones/z/instances/i` equals the full URL.
pub(crate) fn instance_key(link: &str) -> &str {
    match link.find("zones/") {
        Some(i) => &link[i..],
        None => link,
    }
}

/// Last path segment of a link (a resource name).
pub(crate) fn link_name(link: &str) -> &str {
    link.rsplit('/').next().unwrap_or(link)
}

/// A node's `spec.providerID`: which GCE instance it is (read by the route, node and LB code
/// alike, so it lives in this leaf).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProviderId {
    pub project: String,
    pub zone: String,
    pub instance: String,
}

impl ProviderId {
    pub(crate) fn format(&self) -> String {
        format!("gce://{}/{}/{}", self.project, self.zone, self.instance)
    }
}

/// `gce://<project>/<zone>/<instance>`; None for anything else.
pub(crate) fn parse_provider_id(s: &str) -> Option<ProviderId> {
    let rest = s.strip_prefix("gce://")?;
    let mut parts = rest.split('/');
    let (project, zone, instance) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || project.is_empty() || zone.is_empty() || instance.is_empty() {
        return None;
    }
    Some(ProviderId {
        project: project.into(),
        zone: zone.into(),
        instance: instance.into(),
    })
}

/// What instances.get told us about the node's VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstanceFacts {
    pub project: String,
    pub zone: String,
    pub name: String,
    /// machineType URL or name.
    pub machine_type: String,
    /// networkInterfaces[0].networkIP (and further NICs).
    pub internal_ips: Vec<String>,
    /// accessConfigs[].natIP.
    pub external_ips: Vec<String>,
}

/// Result of looking the node's instance up in GCE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InstanceLookup {
    Exists,
    /// instances.get returned 404.
    NotFound,
}
