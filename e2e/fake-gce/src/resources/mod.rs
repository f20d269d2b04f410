//! Per-resource rules: defaults, validation, references, custom verbs and "who uses me".
//! Everything here is pure: it reads the current resources and returns new JSON objects.
use serde_json::{Map, Value};

use crate::config::Config;
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::scope::Scope;
use crate::store::Resources;
use crate::urls::Urls;

pub mod addresses;
pub mod backend_services;
pub mod firewalls;
pub mod forwarding_rules;
pub mod health_checks;
pub mod health_checks_v1;
pub mod instance_groups;
pub mod instances;
pub mod ips;
pub mod networks;
pub mod routes;
pub mod subnetworks;
pub mod target_pools;

/// Read-only view handed to the resource rules.
pub struct Ctx<'a> {
    pub cfg: &'a Config,
    pub urls: &'a Urls,
    pub res: &'a Resources,
}

impl Ctx<'_> {
    /// Resolves a reference field to the canonical selfLink of an existing resource (404 otherwise).
    pub fn existing_link(
        &self,
        field: &str,
        value: &str,
        kind: Kind,
        default_scope: Option<&Scope>,
    ) -> Result<String, ApiError> {
        let (scope, name) = self.urls.parse_ref(field, value, kind, default_scope)?;
        if self.res.get(kind, &scope, &name).is_none() {
            return Err(ApiError::not_found(&self.urls.rel(
                &scope,
                kind.collection(),
                &name,
            )));
        }
        Ok(self.urls.link(&scope, kind, &name))
    }

    /// Canonical selfLink of a reference, whether or not the resource exists.
    pub fn any_link(
        &self,
        field: &str,
        value: &str,
        kind: Kind,
        default_scope: Option<&Scope>,
    ) -> Result<String, ApiError> {
        let (scope, name) = self.urls.parse_ref(field, value, kind, default_scope)?;
        Ok(self.urls.link(&scope, kind, &name))
    }

    /// The configured region's scope.
    pub fn region(&self) -> Scope {
        Scope::Region(self.cfg.region.clone())
    }
}

/// Validates a create/update body and fills GCE's defaults. `existing` is set for patch/update.
pub fn prepare(
    ctx: &Ctx<'_>,
    kind: Kind,
    scope: &Scope,
    obj: Map<String, Value>,
    existing: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    match kind {
        Kind::Network => networks::prepare(ctx, obj),
        Kind::Subnetwork => subnetworks::prepare(ctx, obj, existing),
        Kind::Firewall => firewalls::prepare(ctx, obj),
        Kind::Route => routes::prepare(ctx, obj),
        Kind::HttpHealthCheck => health_checks::prepare(obj),
        Kind::ForwardingRule => forwarding_rules::prepare(ctx, scope, obj, existing),
        Kind::TargetPool => target_pools::prepare(ctx, scope, obj),
        Kind::Address => addresses::prepare(ctx, obj, existing),
        Kind::InstanceGroup => instance_groups::prepare(ctx, obj),
        Kind::BackendService => backend_services::prepare(ctx, scope, obj, existing),
        Kind::HealthCheck | Kind::RegionHealthCheck => health_checks_v1::prepare(obj),
        Kind::InstanceGroupManager => Err(ApiError::new(
            400,
            "unsupported",
            "managed instance groups are not served by svcnet-fake-gce (listed, always empty)",
        )),
        Kind::Instance => Err(ApiError::new(
            400,
            "unsupported",
            "instances.insert is not served by svcnet-fake-gce; create instances with POST /_fake/instances",
        )),
    }
}

/// Kinds that accept PATCH and PUT.
pub fn updatable(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Firewall
            | Kind::HttpHealthCheck
            | Kind::HealthCheck
            | Kind::RegionHealthCheck
            | Kind::BackendService
            | Kind::Subnetwork
    )
}

/// Applies a custom verb to `current`, returning the new resource.
pub fn verb(ctx: &Ctx<'_>, kind: Kind, current: &Value, verb: &str, body: &Value) -> Result<Value, ApiError> {
    match (kind, verb) {
        (Kind::ForwardingRule, "setTarget") => forwarding_rules::set_target(ctx, current, body),
        (Kind::TargetPool, v) => target_pools::verb(ctx, current, v, body),
        (Kind::Instance, "setTags") => instances::set_tags(current, body),
        (Kind::InstanceGroup, v @ ("addInstances" | "removeInstances")) => {
            instance_groups::verb(ctx, current, v, body)
        }
        _ => Err(ApiError::new(
            405,
            "methodNotAllowed",
            format!("Unknown method '{verb}' on {}", kind.collection()),
        )),
    }
}

/// selfLink of a resource that uses `target` (blocking its deletion), if any.
pub fn first_user(res: &Resources, kind: Kind, target: &Value) -> Option<String> {
    let link = target["selfLink"].as_str()?;
    let link_of = |v: &Value| v["selfLink"].as_str().map(str::to_string);
    match kind {
        Kind::TargetPool => res
            .iter(Kind::ForwardingRule)
            .map(|(_, v)| v)
            .find(|fr| fr["target"] == link)
            .and_then(link_of),
        Kind::HttpHealthCheck => res
            .iter(Kind::TargetPool)
            .map(|(_, v)| v)
            .find(|tp| str_list(&tp["healthChecks"]).iter().any(|h| h == link))
            .and_then(link_of),
        // An address a forwarding rule uses is not blocked: deleting it releases the reservation
        // and the rule keeps the IP as ephemeral ("demotes" it). cloud-provider-gcp relies on this
        // (gce_loadbalancer_external.go releases the static IP once the forwarding rule holds it;
        // kubernetes/kubernetes#20662 "deleting it after it is attached demotes it").
        Kind::Network => networks::first_user(res, link),
        Kind::Subnetwork => subnetworks::first_user(res, link),
        Kind::BackendService => res
            .iter(Kind::ForwardingRule)
            .map(|(_, v)| v)
            .find(|fr| fr["backendService"] == link)
            .and_then(link_of),
        Kind::HealthCheck | Kind::RegionHealthCheck => res
            .iter(Kind::BackendService)
            .map(|(_, v)| v)
            .find(|bs| str_list(&bs["healthChecks"]).iter().any(|h| h == link))
            .and_then(link_of),
        Kind::InstanceGroup => res
            .iter(Kind::BackendService)
            .map(|(_, v)| v)
            .find(|bs| {
                bs["backends"]
                    .as_array()
                    .is_some_and(|b| b.iter().any(|b| b["group"] == link))
            })
            .and_then(link_of),
        _ => None,
    }
}

/// Non-mutating custom verbs (POST calls that only read), e.g. `instanceGroups.listInstances`.
pub fn read_only_verb(verb: &str) -> bool {
    verb == "listInstances"
}

/// The resource as the API returns it: private bookkeeping fields (leading `_`) left out.
pub fn public(v: &Value) -> Value {
    match v {
        Value::Object(m) if m.keys().any(|k| k.starts_with('_')) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('_'))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => v.clone(),
    }
}

/// Recomputes fields GCE derives from other resources (address `status` and `users`).
pub fn refresh(res: &mut Resources) {
    addresses::refresh(res);
}

pub fn str_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Sets `field` to `value` when absent.
pub fn default(obj: &mut Map<String, Value>, field: &str, value: Value) {
    if obj.get(field).is_none_or(Value::is_null) {
        obj.insert(field.to_string(), value);
    }
}
