//! The resource collections this fake serves: their URL names, `kind` strings, scope types,
//! nouns in error messages and quota metrics.
use crate::scope::ScopeType;

/// The resource collections this fake serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Network,
    Firewall,
    Route,
    HttpHealthCheck,
    ForwardingRule,
    TargetPool,
    Address,
    Instance,
    InstanceGroup,
    BackendService,
    HealthCheck,
    /// Regional health checks (`regions/R/healthChecks`, regionHealthChecks in the client
    /// libraries): what backend services of external passthrough (RBS) network LBs reference.
    RegionHealthCheck,
    /// Regional subnetworks: IPv4 range, optional IPv6 prefix; what internal addresses and
    /// forwarding rules (and IPv6 ones of either scheme) are allocated from.
    Subnetwork,
    /// Listed (always empty) only: gcloud's `instance-groups unmanaged` commands read it to tell
    /// managed groups apart.
    InstanceGroupManager,
}

impl Kind {
    pub const ALL: [Kind; 14] = [
        Kind::Network,
        Kind::Firewall,
        Kind::Route,
        Kind::HttpHealthCheck,
        Kind::ForwardingRule,
        Kind::TargetPool,
        Kind::Address,
        Kind::Instance,
        Kind::InstanceGroup,
        Kind::BackendService,
        Kind::HealthCheck,
        Kind::RegionHealthCheck,
        Kind::Subnetwork,
        Kind::InstanceGroupManager,
    ];

    /// The URL collection segment (the key in the state dump too, but see [`Kind::state_key`]).
    pub fn collection(self) -> &'static str {
        match self {
            Kind::Network => "networks",
            Kind::Firewall => "firewalls",
            Kind::Route => "routes",
            Kind::HttpHealthCheck => "httpHealthChecks",
            Kind::ForwardingRule => "forwardingRules",
            Kind::TargetPool => "targetPools",
            Kind::Address => "addresses",
            Kind::Instance => "instances",
            Kind::InstanceGroup => "instanceGroups",
            // Served under regions/ only (regionBackendServices in the client libraries).
            Kind::BackendService => "backendServices",
            Kind::HealthCheck | Kind::RegionHealthCheck => "healthChecks",
            Kind::Subnetwork => "subnetworks",
            Kind::InstanceGroupManager => "instanceGroupManagers",
        }
    }

    /// The key of the collection in `/_fake/state` and the state file: the collection, except
    /// for the regional health checks, which share their URL segment with the global ones.
    pub fn state_key(self) -> &'static str {
        match self {
            Kind::RegionHealthCheck => "regionHealthChecks",
            k => k.collection(),
        }
    }

    /// The kind a URL collection segment names in a scope of type `t`.
    pub fn from_collection(s: &str, t: ScopeType) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.collection() == s && k.scope_type() == t)
    }

    pub fn scope_type(self) -> ScopeType {
        match self {
            Kind::Network | Kind::Firewall | Kind::Route | Kind::HttpHealthCheck | Kind::HealthCheck => {
                ScopeType::Global
            }
            Kind::ForwardingRule
            | Kind::TargetPool
            | Kind::Address
            | Kind::BackendService
            | Kind::RegionHealthCheck
            | Kind::Subnetwork => ScopeType::Regional,
            Kind::Instance | Kind::InstanceGroup | Kind::InstanceGroupManager => ScopeType::Zonal,
        }
    }

    /// `kind` field value, e.g. `compute#firewall`.
    pub fn kind_str(self) -> &'static str {
        match self {
            Kind::Network => "compute#network",
            Kind::Firewall => "compute#firewall",
            Kind::Route => "compute#route",
            Kind::HttpHealthCheck => "compute#httpHealthCheck",
            Kind::ForwardingRule => "compute#forwardingRule",
            Kind::TargetPool => "compute#targetPool",
            Kind::Address => "compute#address",
            Kind::Instance => "compute#instance",
            Kind::InstanceGroup => "compute#instanceGroup",
            Kind::BackendService => "compute#backendService",
            Kind::HealthCheck | Kind::RegionHealthCheck => "compute#healthCheck",
            Kind::Subnetwork => "compute#subnetwork",
            Kind::InstanceGroupManager => "compute#instanceGroupManager",
        }
    }

    /// The noun GCE uses in "The <noun> resource '...' is already being used by ..." messages.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Network => "network",
            Kind::Firewall => "firewall",
            Kind::Route => "route",
            Kind::HttpHealthCheck => "httpHealthCheck",
            Kind::ForwardingRule => "forwarding_rule",
            Kind::TargetPool => "target_pool",
            Kind::Address => "address",
            Kind::Instance => "instance",
            Kind::InstanceGroup => "instance_group",
            Kind::BackendService => "backend_service",
            Kind::HealthCheck | Kind::RegionHealthCheck => "health_check",
            Kind::Subnetwork => "subnetwork",
            Kind::InstanceGroupManager => "instance_group_manager",
        }
    }

    /// Quota metric counted on insert, as named in GCE project/region quotas.
    pub fn quota_metric(self) -> Option<&'static str> {
        match self {
            Kind::Firewall => Some("FIREWALLS"),
            Kind::ForwardingRule => Some("FORWARDING_RULES"),
            Kind::TargetPool => Some("TARGET_POOLS"),
            Kind::Route => Some("ROUTES"),
            Kind::Address => Some("STATIC_ADDRESSES"),
            Kind::InstanceGroup => Some("INSTANCE_GROUPS"),
            Kind::BackendService => Some("BACKEND_SERVICES"),
            Kind::HealthCheck => Some("HEALTH_CHECKS"),
            Kind::Subnetwork => Some("SUBNETWORKS"),
            _ => None,
        }
    }
}
