//! Regional forwarding rules: EXTERNAL ones pointing at target pools (network load balancing),
//! INTERNAL ones pointing at a regional backend service in a subnetwork (internal passthrough).
use serde_json::{Map, Value, json};

use super::{Ctx, default, ips, subnetworks};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::scope::Scope;
use crate::validate;

const PROTOCOLS: [&str; 7] = ["TCP", "UDP", "ESP", "AH", "SCTP", "ICMP", "L3_DEFAULT"];

pub fn prepare(
    ctx: &Ctx<'_>,
    scope: &Scope,
    mut obj: Map<String, Value>,
    existing: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    let (proto, scheme) = enum_fields(&mut obj)?;
    let (lo, hi) = ports(&mut obj)?;
    let internal = scheme == "INTERNAL";
    check_flags(&obj, internal)?;
    link_target(ctx, scope, &mut obj, &scheme, &proto)?;
    let v6 = ip_version(&obj)? == "IPV6";
    if v6 && obj.get("target").is_some_and(|t| !t.is_null()) {
        return Err(ApiError::invalid_field(
            "resource.ipVersion",
            "IPV6",
            "Target pools support IPv4 forwarding rules only.",
        ));
    }
    if internal {
        link_network(ctx, &mut obj)?;
    } else if v6 {
        link_external_v6_subnetwork(ctx, &mut obj)?;
    } else if obj.get("subnetwork").is_some_and(|v| !v.is_null()) {
        return Err(ApiError::invalid_field(
            "resource.subnetwork",
            "",
            "subnetwork may only be set on internal forwarding rules and external IPv6 ones.",
        ));
    }
    let ip = if v6 {
        v6_address(ctx, scope, &obj, internal)?
    } else {
        address(ctx, scope, &obj, &scheme)?
    };
    check_ip_conflict(ctx, existing, &ip, &proto, (lo, hi))?;
    obj.insert("IPAddress".into(), json!(ip));
    Ok(obj)
}

/// Defaults and checks the protocol, network tier and scheme; returns the protocol and scheme.
fn enum_fields(obj: &mut Map<String, Value>) -> Result<(String, String), ApiError> {
    default(obj, "IPProtocol", json!("TCP"));
    let proto = validate::opt_str(obj, "IPProtocol")?.unwrap_or("TCP").to_string();
    validate::one_of("resource.IPProtocol", &proto, &PROTOCOLS)?;
    default(obj, "loadBalancingScheme", json!("EXTERNAL"));
    let scheme = validate::opt_str(obj, "loadBalancingScheme")?
        .unwrap_or("EXTERNAL")
        .to_string();
    default(obj, "networkTier", json!("PREMIUM"));
    let tier = validate::opt_str(obj, "networkTier")?
        .unwrap_or("PREMIUM")
        .to_string();
    validate::one_of("resource.networkTier", &tier, &["PREMIUM", "STANDARD"])?;
    validate::one_of(
        "resource.loadBalancingScheme",
        &scheme,
        &["EXTERNAL", "INTERNAL", "EXTERNAL_MANAGED", "INTERNAL_MANAGED"],
    )?;
    Ok((proto, scheme))
}

/// `allPorts` excludes explicit ports; `allowGlobalAccess` is for INTERNAL rules only.
fn check_flags(obj: &Map<String, Value>, internal: bool) -> Result<(), ApiError> {
    let all_ports = obj.get("allPorts").and_then(Value::as_bool).unwrap_or(false);
    if all_ports && (obj.get("portRange").is_some() || !validate::opt_str_list(obj, "ports")?.is_empty()) {
        return Err(ApiError::invalid(
            "Invalid value for field 'resource.allPorts': 'true'. allPorts cannot be set together with ports or portRange.",
        ));
    }
    if !all_ports && obj.get("IPProtocol").and_then(Value::as_str) == Some("L3_DEFAULT") {
        return Err(ApiError::invalid(
            "Invalid value for field 'resource.allPorts': 'false'. An L3_DEFAULT forwarding rule must set allPorts.",
        ));
    }
    if obj
        .get("allowGlobalAccess")
        .and_then(Value::as_bool)
        .unwrap_or(false)
        && !internal
    {
        return Err(ApiError::invalid_field(
            "resource.allowGlobalAccess",
            "true",
            "allowGlobalAccess may only be set on forwarding rules with loadBalancingScheme INTERNAL.",
        ));
    }
    Ok(())
}

/// Resolves the one target: a target pool, or a backend service whose scheme (and, for INTERNAL
/// rules, protocol) matches the rule's.
fn link_target(
    ctx: &Ctx<'_>,
    scope: &Scope,
    obj: &mut Map<String, Value>,
    scheme: &str,
    proto: &str,
) -> Result<(), ApiError> {
    match (
        validate::opt_str(obj, "target")?.map(str::to_string),
        validate::opt_str(obj, "backendService")?.map(str::to_string),
    ) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "A forwarding rule cannot have both a target and a backendService.",
            ));
        }
        (Some(_), None) if proto == "L3_DEFAULT" => {
            return Err(ApiError::invalid_field(
                "resource.IPProtocol",
                proto,
                "L3_DEFAULT forwarding rules may only point at a backend service.",
            ));
        }
        (Some(t), None) => {
            let link = ctx.existing_link("resource.target", &t, Kind::TargetPool, Some(scope))?;
            obj.insert("target".into(), json!(link));
        }
        (None, Some(b)) => {
            let link = ctx.existing_link("resource.backendService", &b, Kind::BackendService, Some(scope))?;
            let bs_scheme = ctx
                .res
                .find_by_link(Kind::BackendService, &link)
                .and_then(|v| v["loadBalancingScheme"].as_str())
                .unwrap_or_default();
            if bs_scheme != scheme {
                return Err(ApiError::invalid_field(
                    "resource.backendService",
                    &b,
                    "The load balancing scheme of the forwarding rule and its backend service must match.",
                ));
            }
            let bs_proto = ctx
                .res
                .find_by_link(Kind::BackendService, &link)
                .and_then(|v| v["protocol"].as_str())
                .unwrap_or_default();
            check_protocol_pair(scheme, proto, bs_proto)?;
            obj.insert("backendService".into(), json!(link));
        }
        (None, None) => return Err(ApiError::required("resource.target")),
    }
    Ok(())
}

/// The rule's protocol against its backend service's: an L3_DEFAULT rule needs an UNSPECIFIED
/// backend service; otherwise they match, except that an INTERNAL rule may use an UNSPECIFIED
/// one (GCE's wording is approximated).
fn check_protocol_pair(scheme: &str, proto: &str, bs_proto: &str) -> Result<(), ApiError> {
    let ok = if proto == "L3_DEFAULT" {
        bs_proto == "UNSPECIFIED"
    } else {
        bs_proto == proto || (scheme == "INTERNAL" && bs_proto == "UNSPECIFIED")
    };
    if ok {
        return Ok(());
    }
    Err(ApiError::invalid_field(
        "resource.IPProtocol",
        proto,
        &format!(
            "The protocol of the forwarding rule must match the protocol of its backend service ({bs_proto}); L3_DEFAULT goes with UNSPECIFIED."
        ),
    ))
}

/// An INTERNAL rule's network (default `default`) and subnetwork (default: the network's
/// subnetwork in this region), both stored as full URLs; the tier does not apply to it. The
/// subnetwork must exist and belong to the network.
fn link_network(ctx: &Ctx<'_>, obj: &mut Map<String, Value>) -> Result<(), ApiError> {
    obj.remove("networkTier");
    let net = validate::opt_str(obj, "network")?
        .unwrap_or("default")
        .to_string();
    let net = ctx.existing_link("resource.network", &net, Kind::Network, Some(&Scope::Global))?;
    obj.insert("network".into(), json!(net));
    let sub = match validate::opt_str(obj, "subnetwork")? {
        Some(sub) => subnetworks::resolve(ctx, "resource.subnetwork", sub)?,
        None => subnetworks::default_for(ctx, &net)?,
    };
    if sub["network"] != net.as_str() {
        return Err(ApiError::invalid_field(
            "resource.subnetwork",
            sub["selfLink"].as_str().unwrap_or_default(),
            "The subnetwork must belong to the forwarding rule's network.",
        ));
    }
    obj.insert("subnetwork".into(), sub["selfLink"].clone());
    Ok(())
}

/// `ipVersion` (IPV4 when absent; GCE leaves it unset then).
fn ip_version(obj: &Map<String, Value>) -> Result<String, ApiError> {
    let v = validate::opt_str(obj, "ipVersion")?.unwrap_or("IPV4").to_string();
    validate::one_of("resource.ipVersion", &v, &["IPV4", "IPV6"])?;
    Ok(v)
}

/// An EXTERNAL IPv6 rule names the subnetwork its address comes from (required, as in GCE).
fn link_external_v6_subnetwork(ctx: &Ctx<'_>, obj: &mut Map<String, Value>) -> Result<(), ApiError> {
    let sub =
        validate::opt_str(obj, "subnetwork")?.ok_or_else(|| ApiError::required("resource.subnetwork"))?;
    let sub = subnetworks::resolve(ctx, "resource.subnetwork", sub)?;
    obj.insert("subnetwork".into(), sub["selfLink"].clone());
    Ok(())
}

/// An IPv6 rule's address as GCE stores it: a /96 in CIDR form (`ADDR/96`), from the
/// subnetwork's prefix of the matching access type (EXTERNAL rules need an EXTERNAL prefix,
/// INTERNAL ones an INTERNAL one); a requested address (with or without `/96`, or an address
/// resource) must lie in that prefix.
fn v6_address(
    ctx: &Ctx<'_>,
    scope: &Scope,
    obj: &Map<String, Value>,
    internal: bool,
) -> Result<String, ApiError> {
    let sub_link = obj.get("subnetwork").and_then(Value::as_str).unwrap_or_default();
    let sub = ctx
        .res
        .find_by_link(Kind::Subnetwork, sub_link)
        .ok_or_else(|| ApiError::required("resource.subnetwork"))?;
    let want = if internal { "INTERNAL" } else { "EXTERNAL" };
    let prefix = match subnetworks::v6_prefix(sub) {
        Some((p, access)) if access == want => p,
        _ => {
            return Err(ApiError::invalid_field(
                "resource.subnetwork",
                sub_link,
                &format!("The subnetwork does not have an {want} IPv6 range (ipv6AccessType {want})."),
            ));
        }
    };
    let ip = match validate::opt_str(obj, "IPAddress")? {
        None | Some("") => subnetworks::allocate_v6(prefix, ctx.res)?,
        Some(r) => {
            let literal = if r.contains("/addresses/") || r.starts_with("projects/") || !r.contains(':') {
                let link = ctx.existing_link("resource.IPAddress", r, Kind::Address, Some(scope))?;
                ctx.res
                    .find_by_link(Kind::Address, &link)
                    .and_then(|a| a["address"].as_str())
                    .map(str::to_string)
                    .ok_or_else(|| {
                        ApiError::invalid_field("resource.IPAddress", r, "The address has no IP.")
                    })?
            } else {
                subnetworks::strip_len(r).to_string()
            };
            match validate::ip("resource.IPAddress", &literal)? {
                std::net::IpAddr::V6(v6) if prefix.contains(&v6) => v6,
                _ => {
                    return Err(ApiError::invalid_field(
                        "resource.IPAddress",
                        r,
                        "The IPv6 address is not in the subnetwork's IPv6 range.",
                    ));
                }
            }
        }
    };
    Ok(format!("{ip}/{}", subnetworks::IPV6_RANGE_LEN))
}

/// The rule's IP: allocated from the scheme's range when absent, read from a referenced address
/// resource, or a checked literal.
fn address(ctx: &Ctx<'_>, scope: &Scope, obj: &Map<String, Value>, scheme: &str) -> Result<String, ApiError> {
    let internal = scheme == "INTERNAL";
    Ok(match validate::opt_str(obj, "IPAddress")? {
        None | Some("") => {
            let pool = if internal {
                obj.get("subnetwork")
                    .and_then(Value::as_str)
                    .and_then(|l| ctx.res.find_by_link(Kind::Subnetwork, l))
                    .and_then(subnetworks::v4_range)
                    .unwrap_or(ctx.cfg.internal_range)
            } else if scheme == "EXTERNAL" {
                ctx.cfg.external_range
            } else {
                ctx.cfg.internal_range
            };
            ips::allocate(pool, ctx.res, if internal { "internal" } else { "external" })?.to_string()
        }
        Some(r) if r.contains('/') => {
            let link = ctx.existing_link("resource.IPAddress", r, Kind::Address, Some(scope))?;
            ctx.res
                .find_by_link(Kind::Address, &link)
                .and_then(|a| a["address"].as_str())
                .map(str::to_string)
                .ok_or_else(|| ApiError::invalid_field("resource.IPAddress", r, "The address has no IP."))?
        }
        Some(literal) => {
            validate::ip("resource.IPAddress", literal)?;
            literal.to_string()
        }
    })
}

/// Two rules may share an IP only on different protocols or disjoint port ranges (`existing` is
/// the rule being updated, which never conflicts with itself).
fn check_ip_conflict(
    ctx: &Ctx<'_>,
    existing: Option<&Value>,
    ip: &str,
    proto: &str,
    (lo, hi): (u16, u16),
) -> Result<(), ApiError> {
    let own = existing.and_then(|e| e["selfLink"].as_str());
    for (_, other) in ctx.res.iter(Kind::ForwardingRule) {
        if other["IPAddress"] != ip || other["selfLink"].as_str() == own || other["IPProtocol"] != proto {
            continue;
        }
        let (olo, ohi) = other_bounds(other);
        if olo <= hi && lo <= ohi {
            return Err(ApiError::invalid_field(
                "resource.IPAddress",
                ip,
                "Specified IP address is in-use and would result in a conflict.",
            ));
        }
    }
    Ok(())
}

/// The port span another rule covers: its portRange, the bounds of its ports, else all ports.
fn other_bounds(other: &Value) -> (u16, u16) {
    if let Some(r) = other["portRange"].as_str() {
        return validate::port_range("portRange", r).unwrap_or((1, 65535));
    }
    let mut bounds: Option<(u16, u16)> = None;
    for p in super::str_list(&other["ports"]) {
        if let Ok((lo, hi)) = validate::port_range("ports", &p) {
            bounds = Some(bounds.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
    }
    bounds.unwrap_or((1, 65535))
}

/// Normalises `portRange` ("80" -> "80-80") and checks `ports`; returns the covered range.
fn ports(obj: &mut Map<String, Value>) -> Result<(u16, u16), ApiError> {
    let range = validate::opt_str(obj, "portRange")?.map(str::to_string);
    let list = validate::opt_str_list(obj, "ports")?;
    if range.is_some() && !list.is_empty() {
        return Err(ApiError::invalid("portRange and ports cannot both be specified."));
    }
    if list.len() > 5 {
        return Err(ApiError::invalid_field(
            "resource.ports",
            &list.join(","),
            "At most 5 ports may be specified.",
        ));
    }
    if let Some(r) = range {
        let (lo, hi) = validate::port_range("resource.portRange", &r)?;
        obj.insert("portRange".into(), json!(format!("{lo}-{hi}")));
        return Ok((lo, hi));
    }
    let mut bounds: Option<(u16, u16)> = None;
    for (i, p) in list.iter().enumerate() {
        let (lo, hi) = validate::port_range(&format!("resource.ports[{i}]"), p)?;
        bounds = Some(bounds.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
    }
    Ok(bounds.unwrap_or((1, 65535)))
}

pub fn set_target(ctx: &Ctx<'_>, current: &Value, body: &Value) -> Result<Value, ApiError> {
    let t = body["target"]
        .as_str()
        .ok_or_else(|| ApiError::required("target"))?;
    let link = ctx.existing_link("target", t, Kind::TargetPool, Some(&ctx.region()))?;
    let mut next = current.clone();
    next["target"] = json!(link);
    Ok(next)
}
