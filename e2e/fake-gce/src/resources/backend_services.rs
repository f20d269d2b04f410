//! Regional backend services (internal passthrough load balancing, and external passthrough
//! network load balancing over backend services): instance groups as backends, exactly one
//! health check (a regional one for EXTERNAL), and a fingerprint that guards updates.
use serde_json::{Map, Value, json};

use super::{Ctx, default};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::scope::Scope;
use crate::validate;

const SCHEMES: [&str; 4] = ["INTERNAL", "EXTERNAL", "INTERNAL_MANAGED", "EXTERNAL_MANAGED"];
const PROTOCOLS: [&str; 5] = ["TCP", "UDP", "SCTP", "UNSPECIFIED", "HTTP"];
/// GCE's localityLbPolicy values.
const LOCALITY_POLICIES: [&str; 8] = [
    "ROUND_ROBIN",
    "LEAST_REQUEST",
    "RING_HASH",
    "RANDOM",
    "ORIGINAL_DESTINATION",
    "MAGLEV",
    "WEIGHTED_MAGLEV",
    "WEIGHTED_ROUND_ROBIN",
];
const AFFINITIES: [&str; 4] = ["NONE", "CLIENT_IP", "CLIENT_IP_PROTO", "CLIENT_IP_PORT_PROTO"];

pub fn prepare(
    ctx: &Ctx<'_>,
    scope: &Scope,
    mut obj: Map<String, Value>,
    existing: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    if let Some(cur) = existing {
        check_fingerprint(&obj, cur)?;
    }
    let scheme = enum_fields(&mut obj)?;
    let hcs = health_checks(ctx, &obj, &scheme)?;
    check_locality(ctx, &obj, &scheme, &hcs)?;
    obj.insert("healthChecks".into(), json!(hcs));
    let backends = backends(ctx, &mut obj, &scheme)?;
    if !backends.is_empty() {
        obj.insert("backends".into(), json!(backends));
    }
    if let Some(net) = obj.get("network").and_then(Value::as_str).map(str::to_string) {
        let link = ctx.existing_link("resource.network", &net, Kind::Network, Some(&Scope::Global))?;
        obj.insert("network".into(), json!(link));
    }
    if obj.get("connectionDraining").is_none_or(Value::is_null) {
        obj.insert("connectionDraining".into(), json!({ "drainingTimeoutSec": 0 }));
    }
    let _ = scope;
    // A new fingerprint per write (the old one is part of the hashed content), as GCE does.
    obj.insert("fingerprint".into(), json!(fingerprint(&obj)));
    Ok(obj)
}

/// Optimistic locking: an update must carry the fingerprint it read.
fn check_fingerprint(obj: &Map<String, Value>, cur: &Value) -> Result<(), ApiError> {
    let sent = validate::opt_str(obj, "fingerprint")?;
    let have = cur["fingerprint"].as_str();
    if sent.is_none() || sent != have {
        return Err(ApiError::new(
            412,
            "conditionNotMet",
            "Supplied fingerprint does not match current resource fingerprint.",
        ));
    }
    Ok(())
}

/// Defaults and checks the scheme, protocol and session affinity; returns the scheme.
fn enum_fields(obj: &mut Map<String, Value>) -> Result<String, ApiError> {
    default(obj, "loadBalancingScheme", json!("EXTERNAL"));
    let scheme = validate::opt_str(obj, "loadBalancingScheme")?
        .unwrap_or("EXTERNAL")
        .to_string();
    validate::one_of("resource.loadBalancingScheme", &scheme, &SCHEMES)?;
    default(obj, "protocol", json!("TCP"));
    let proto = validate::opt_str(obj, "protocol")?.unwrap_or("TCP").to_string();
    validate::one_of("resource.protocol", &proto, &PROTOCOLS)?;
    default(obj, "sessionAffinity", json!("NONE"));
    let aff = validate::opt_str(obj, "sessionAffinity")?
        .unwrap_or("NONE")
        .to_string();
    validate::one_of("resource.sessionAffinity", &aff, &AFFINITIES)?;
    Ok(scheme)
}

/// The health check references as full links: global or regional checks by the reference's scope
/// (a bare name is a global one). An INTERNAL service needs exactly one; an EXTERNAL (passthrough
/// network LB) one exactly one regional check, as GCE requires of backend-service-based network
/// load balancers (the wording of GCE's refusal is approximated).
fn health_checks(ctx: &Ctx<'_>, obj: &Map<String, Value>, scheme: &str) -> Result<Vec<String>, ApiError> {
    let mut hcs = Vec::new();
    let mut regional = Vec::new();
    for (i, r) in validate::opt_str_list(obj, "healthChecks")?.iter().enumerate() {
        let field = format!("resource.healthChecks[{i}]");
        let is_regional = r.starts_with("regions/") || r.contains("/regions/");
        let (kind, scope) = if is_regional {
            (Kind::RegionHealthCheck, ctx.region())
        } else {
            (Kind::HealthCheck, Scope::Global)
        };
        hcs.push(ctx.existing_link(&field, r, kind, Some(&scope))?);
        regional.push(is_regional);
    }
    if scheme == "INTERNAL" && hcs.len() != 1 {
        return Err(ApiError::invalid(
            "Invalid value for field 'resource.healthChecks': ''. A backend service with loadBalancingScheme INTERNAL must have exactly one health check.",
        ));
    }
    if scheme == "EXTERNAL" && (hcs.len() != 1 || regional.contains(&false)) {
        return Err(ApiError::invalid(
            "Invalid value for field 'resource.healthChecks': ''. A regional backend service with loadBalancingScheme EXTERNAL must have exactly one regional health check.",
        ));
    }
    Ok(hcs)
}

/// `localityLbPolicy`: a known value; WEIGHTED_MAGLEV only on an EXTERNAL backend service whose
/// check is HTTP-based, since the weights come from the check's answers (GCE's wording is
/// approximated).
fn check_locality(
    ctx: &Ctx<'_>,
    obj: &Map<String, Value>,
    scheme: &str,
    hcs: &[String],
) -> Result<(), ApiError> {
    let Some(policy) = validate::opt_str(obj, "localityLbPolicy")? else {
        return Ok(());
    };
    validate::one_of("resource.localityLbPolicy", policy, &LOCALITY_POLICIES)?;
    if policy != "WEIGHTED_MAGLEV" {
        return Ok(());
    }
    if scheme != "EXTERNAL" {
        return Err(ApiError::invalid_field(
            "resource.localityLbPolicy",
            policy,
            "WEIGHTED_MAGLEV is only applicable to loadBalancingScheme EXTERNAL.",
        ));
    }
    let http = hcs.iter().all(|link| {
        ctx.res
            .find_by_link(Kind::RegionHealthCheck, link)
            .and_then(|hc| hc["type"].as_str())
            .is_some_and(|t| matches!(t, "HTTP" | "HTTPS" | "HTTP2"))
    });
    if !http {
        return Err(ApiError::invalid_field(
            "resource.localityLbPolicy",
            policy,
            "WEIGHTED_MAGLEV needs a non-legacy HTTP, HTTPS or HTTP2 health check.",
        ));
    }
    Ok(())
}

/// Takes `backends` out of `obj` and returns them with each group as a full link (no group twice)
/// and the scheme's default balancing mode filled in.
fn backends(ctx: &Ctx<'_>, obj: &mut Map<String, Value>, scheme: &str) -> Result<Vec<Value>, ApiError> {
    let mut backends = Vec::new();
    let mut groups: Vec<String> = Vec::new();
    let raw = match obj.remove("backends") {
        Some(Value::Array(a)) => a,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(ApiError::invalid("backends must be a list.")),
    };
    for (i, b) in raw.into_iter().enumerate() {
        let Value::Object(mut b) = b else {
            return Err(ApiError::invalid(format!("backends[{i}] must be an object.")));
        };
        let field = format!("resource.backends[{i}].group");
        let g = validate::opt_str(&b, "group")?
            .ok_or_else(|| ApiError::required(&field))?
            .to_string();
        let link = ctx.existing_link(&field, &g, Kind::InstanceGroup, None)?;
        if groups.contains(&link) {
            return Err(ApiError::invalid_field(
                &field,
                &g,
                "Duplicate instance group in backends.",
            ));
        }
        groups.push(link.clone());
        b.insert("group".into(), json!(link));
        // Passthrough load balancers (INTERNAL, and regional EXTERNAL: the network LB) balance
        // by connection; the proxy-based (*_MANAGED) ones by utilization.
        let mode = if scheme == "INTERNAL" || scheme == "EXTERNAL" {
            "CONNECTION"
        } else {
            "UTILIZATION"
        };
        if b.get("balancingMode").is_none_or(Value::is_null) {
            b.insert("balancingMode".into(), json!(mode));
        }
        backends.push(Value::Object(b));
    }
    Ok(backends)
}

/// An opaque fingerprint derived from the content, so every change yields a new one. GCE sends
/// base64 (the official clients decode it as bytes); 16 hex digits are valid base64 that decodes
/// and re-encodes to the same text, whichever base64 alphabet a client uses.
pub(crate) fn fingerprint(obj: &Map<String, Value>) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    Value::Object(obj.clone()).to_string().hash(&mut h);
    format!("{:016x}", h.finish())
}
