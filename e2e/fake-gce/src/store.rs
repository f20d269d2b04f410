//! The in-memory project: resources as GCE JSON objects, keyed by "<scope>/<name>".
//!
//! Resources are kept as `serde_json::Value` in exactly the API's shape (same field names), so the
//! `/_fake/state` dump and the state file read like GCE listings.
use std::collections::BTreeMap;

use serde_json::Value;

use crate::operations::Operation;

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
    /// Listed (always empty) only: gcloud's `instance-groups unmanaged` commands read it to tell
    /// managed groups apart.
    InstanceGroupManager,
}

/// Where a resource lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeType {
    Global,
    Regional,
    Zonal,
}

impl Kind {
    pub const ALL: [Kind; 12] = [
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
        Kind::InstanceGroupManager,
    ];

    /// The URL collection segment (also the key in the state dump).
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
            Kind::HealthCheck => "healthChecks",
            Kind::InstanceGroupManager => "instanceGroupManagers",
        }
    }

    pub fn from_collection(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.collection() == s)
    }

    pub fn scope_type(self) -> ScopeType {
        match self {
            Kind::Network | Kind::Firewall | Kind::Route | Kind::HttpHealthCheck | Kind::HealthCheck => {
                ScopeType::Global
            }
            Kind::ForwardingRule | Kind::TargetPool | Kind::Address | Kind::BackendService => {
                ScopeType::Regional
            }
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
            Kind::HealthCheck => "compute#healthCheck",
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
            Kind::HealthCheck => "health_check",
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
            _ => None,
        }
    }
}

/// A concrete scope: `global`, `regions/R` or `zones/Z`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Global,
    Region(String),
    Zone(String),
}

impl Scope {
    pub fn path(&self) -> String {
        match self {
            Scope::Global => "global".to_string(),
            Scope::Region(r) => format!("regions/{r}"),
            Scope::Zone(z) => format!("zones/{z}"),
        }
    }

    pub fn scope_type(&self) -> ScopeType {
        match self {
            Scope::Global => ScopeType::Global,
            Scope::Region(_) => ScopeType::Regional,
            Scope::Zone(_) => ScopeType::Zonal,
        }
    }

    pub fn parse(path: &str) -> Option<Scope> {
        if path == "global" {
            return Some(Scope::Global);
        }
        if let Some(r) = path.strip_prefix("regions/") {
            return Some(Scope::Region(r.to_string()));
        }
        path.strip_prefix("zones/").map(|z| Scope::Zone(z.to_string()))
    }
}

/// Key of a resource inside its collection map.
pub fn key(scope: &Scope, name: &str) -> String {
    format!("{}/{name}", scope.path())
}

/// Every resource, by kind then key.
#[derive(Clone, Debug, Default)]
pub struct Resources {
    pub by_kind: BTreeMap<Kind, BTreeMap<String, Value>>,
}

impl Resources {
    pub fn map(&self, kind: Kind) -> Option<&BTreeMap<String, Value>> {
        self.by_kind.get(&kind)
    }

    pub fn map_mut(&mut self, kind: Kind) -> &mut BTreeMap<String, Value> {
        self.by_kind.entry(kind).or_default()
    }

    pub fn get(&self, kind: Kind, scope: &Scope, name: &str) -> Option<&Value> {
        self.map(kind).and_then(|m| m.get(&key(scope, name)))
    }

    pub fn iter(&self, kind: Kind) -> impl Iterator<Item = (&String, &Value)> {
        self.map(kind).into_iter().flat_map(|m| m.iter())
    }

    /// Resources of one scope, in name order.
    pub fn in_scope<'a>(&'a self, kind: Kind, scope: &Scope) -> impl Iterator<Item = &'a Value> {
        let prefix = format!("{}/", scope.path());
        self.iter(kind)
            .filter(move |(k, _)| k.starts_with(&prefix))
            .map(|(_, v)| v)
    }

    pub fn count(&self, kind: Kind) -> usize {
        self.map(kind).map_or(0, |m| m.len())
    }

    /// Find by selfLink (exact string compare after normalisation by the caller).
    pub fn find_by_link(&self, kind: Kind, link: &str) -> Option<&Value> {
        self.iter(kind).map(|(_, v)| v).find(|v| v["selfLink"] == link)
    }
}

/// Everything the fake remembers (the part that survives in the state file is `Persisted`).
#[derive(Debug, Default)]
pub struct Data {
    pub resources: Resources,
    pub operations: BTreeMap<String, Operation>,
    pub next_id: u64,
}

impl Data {
    /// GCE ids are unsigned 64-bit numbers sent as strings.
    pub fn new_id(&mut self) -> String {
        self.next_id += 1;
        format!("{}", 4_000_000_000_000_000_000u64 + self.next_id)
    }
}
