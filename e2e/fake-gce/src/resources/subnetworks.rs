//! Regional subnetworks: an IPv4 `ipCidrRange` and, for dual-stack ones (`stackType`
//! IPV4_IPV6), a /64 IPv6 prefix GCE assigns: `externalIpv6Prefix` for `ipv6AccessType` EXTERNAL,
//! `internalIpv6Prefix` for INTERNAL. Internal addresses and forwarding rules take their IPv4 from
//! the range, IPv6 ones (either scheme) a /96 of the prefix. The `default` network has a
//! `default` subnetwork in the region over `--internal-range` from the start.
use std::net::{IpAddr, Ipv6Addr};

use ipnet::{Ipv4Net, Ipv6Net};
use serde_json::{Map, Value, json};

use super::{Ctx, default};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::scope::Scope;
use crate::store::Resources;
use crate::validate;

const STACK_TYPES: [&str; 3] = ["IPV4_ONLY", "IPV4_IPV6", "IPV6_ONLY"];
const ACCESS_TYPES: [&str; 2] = ["EXTERNAL", "INTERNAL"];
/// GCE hands out IPv6 to forwarding rules and VMs as /96 ranges of the subnet's /64.
pub const IPV6_RANGE_LEN: u8 = 96;

/// Insert, or PATCH when `existing` is set: the fingerprint must match, `network` and
/// `ipCidrRange` stay (GCE widens a range only through expandIpCidrRange), and a stack or access
/// type change adds or drops the IPv6 prefix (an unchanged access type keeps its prefix).
pub fn prepare(
    ctx: &Ctx<'_>,
    mut obj: Map<String, Value>,
    existing: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    if let Some(cur) = existing {
        check_patch(&obj, cur)?;
    }
    let net = validate::opt_str(&obj, "network")?
        .ok_or_else(|| ApiError::required("resource.network"))?
        .to_string();
    let net = ctx.existing_link("resource.network", &net, Kind::Network, Some(&Scope::Global))?;
    obj.insert("network".into(), json!(net));
    default(&mut obj, "stackType", json!("IPV4_ONLY"));
    let stack = validate::opt_str(&obj, "stackType")?
        .unwrap_or("IPV4_ONLY")
        .to_string();
    validate::one_of("resource.stackType", &stack, &STACK_TYPES)?;
    let range = validate::opt_str(&obj, "ipCidrRange")?
        .ok_or_else(|| ApiError::required("resource.ipCidrRange"))?
        .to_string();
    let v4 = ipv4_range(&range)?;
    check_overlap(ctx, &obj, &net, &range, v4)?;
    obj.insert("gatewayAddress".into(), json!(gateway(v4)));
    default(&mut obj, "privateIpGoogleAccess", json!(false));
    default(&mut obj, "purpose", json!("PRIVATE"));
    // Back to IPv4-only by PATCH: the merged object still carries the old access type.
    let back_to_v4 = existing.is_some_and(|cur| cur.get("ipv6AccessType") == obj.get("ipv6AccessType"));
    if stack == "IPV4_ONLY" && back_to_v4 {
        obj.remove("ipv6AccessType");
    }
    // GCE assigns the IPv6 prefixes; client-sent ones are ignored.
    for f in ["externalIpv6Prefix", "internalIpv6Prefix", "ipv6CidrRange"] {
        obj.remove(f);
    }
    ipv6_prefix(ctx, &mut obj, &stack, existing)?;
    let fp = super::backend_services::fingerprint(&obj);
    obj.insert("fingerprint".into(), json!(fp));
    Ok(obj)
}

/// A range may not overlap another subnetwork of the same network.
fn check_overlap(
    ctx: &Ctx<'_>,
    obj: &Map<String, Value>,
    net: &str,
    range: &str,
    v4: Ipv4Net,
) -> Result<(), ApiError> {
    let own_name = obj.get("name").and_then(Value::as_str).unwrap_or_default();
    for (_, other) in ctx.res.iter(Kind::Subnetwork) {
        if other["network"] != net || other["name"] == own_name {
            continue;
        }
        let overlaps = other["ipCidrRange"]
            .as_str()
            .and_then(|r| r.parse::<Ipv4Net>().ok())
            .is_some_and(|o| o.contains(&v4.network()) || v4.contains(&o.network()));
        if overlaps {
            return Err(ApiError::invalid(format!(
                "Invalid IPCidrRange: {range} conflicts with existing subnetwork '{}' in region '{}'.",
                other["name"].as_str().unwrap_or_default(),
                ctx.cfg.region
            )));
        }
    }
    Ok(())
}

/// The IPv6 prefix of the stack and access type: none for IPV4_ONLY, else a /64 of the access
/// type's pool (the current one on a PATCH that keeps the access type).
fn ipv6_prefix(
    ctx: &Ctx<'_>,
    obj: &mut Map<String, Value>,
    stack: &str,
    existing: Option<&Value>,
) -> Result<(), ApiError> {
    let access = validate::opt_str(obj, "ipv6AccessType")?.map(str::to_string);
    match (stack, access) {
        ("IPV4_ONLY", None) => {}
        ("IPV4_ONLY", Some(a)) => {
            return Err(ApiError::invalid_field(
                "resource.ipv6AccessType",
                &a,
                "ipv6AccessType can only be set on subnetworks with stackType IPV4_IPV6 or IPV6_ONLY.",
            ));
        }
        (_, None) => return Err(ApiError::required("resource.ipv6AccessType")),
        (_, Some(a)) => {
            validate::one_of("resource.ipv6AccessType", &a, &ACCESS_TYPES)?;
            let (pool, field) = if a == "EXTERNAL" {
                (ctx.cfg.external_ipv6_range, "externalIpv6Prefix")
            } else {
                (ctx.cfg.internal_ipv6_range, "internalIpv6Prefix")
            };
            let kept = existing
                .filter(|cur| cur["ipv6AccessType"] == a.as_str())
                .and_then(|cur| cur[field].as_str())
                .and_then(|p| p.parse::<Ipv6Net>().ok());
            let prefix = match kept {
                Some(p) => p,
                None => allocate_prefix(pool, ctx.res)?,
            };
            obj.insert(field.into(), json!(prefix.to_string()));
            if a == "INTERNAL" {
                obj.insert("ipv6CidrRange".into(), json!(prefix.to_string()));
            }
        }
    }
    Ok(())
}

fn check_patch(obj: &Map<String, Value>, cur: &Value) -> Result<(), ApiError> {
    if obj.get("fingerprint") != cur.get("fingerprint") {
        return Err(ApiError::new(
            412,
            "conditionNotMet",
            "Supplied fingerprint does not match current resource fingerprint.",
        ));
    }
    for f in ["network", "ipCidrRange"] {
        if obj.get(f) != cur.get(f) {
            return Err(ApiError::invalid_field(
                &format!("resource.{f}"),
                obj.get(f).and_then(Value::as_str).unwrap_or_default(),
                "This field cannot be changed by a patch.",
            ));
        }
    }
    Ok(())
}

fn ipv4_range(range: &str) -> Result<Ipv4Net, ApiError> {
    let bad = |why: &str| ApiError::invalid_field("resource.ipCidrRange", range, why);
    let net: Ipv4Net = range
        .parse()
        .map_err(|_| bad("Must be a valid IPv4 CIDR range."))?;
    if net.trunc() != net {
        return Err(bad("The range has host bits set."));
    }
    if net.prefix_len() > 29 {
        return Err(bad("The range must be /29 or larger."));
    }
    Ok(net)
}

fn gateway(net: Ipv4Net) -> String {
    net.hosts().next().unwrap_or(net.network()).to_string()
}

/// The first /64 of `pool` no subnetwork has.
fn allocate_prefix(pool: Ipv6Net, res: &Resources) -> Result<Ipv6Net, ApiError> {
    let taken: Vec<String> = res
        .iter(Kind::Subnetwork)
        .flat_map(|(_, s)| {
            ["externalIpv6Prefix", "internalIpv6Prefix"]
                .into_iter()
                .filter_map(|f| s[f].as_str().map(str::to_string))
        })
        .collect();
    pool.subnets(64)
        .ok()
        .into_iter()
        .flatten()
        .find(|p| !taken.contains(&p.to_string()))
        .ok_or_else(|| {
            ApiError::new(
                403,
                "quotaExceeded",
                format!("No free IPv6 /64 left in {pool} (svcnet-fake-gce pool exhausted)."),
            )
        })
}

/// The `default` subnetwork of the `default` network, as a fresh project has it in the region.
pub fn default_subnetwork(ctx: &Ctx<'_>) -> Map<String, Value> {
    let mut obj = Map::new();
    obj.insert("name".into(), json!("default"));
    obj.insert(
        "network".into(),
        json!(ctx.urls.link(&Scope::Global, Kind::Network, "default")),
    );
    obj.insert("ipCidrRange".into(), json!(ctx.cfg.internal_range.to_string()));
    obj.insert("gatewayAddress".into(), json!(gateway(ctx.cfg.internal_range)));
    obj.insert("privateIpGoogleAccess".into(), json!(false));
    obj.insert("purpose".into(), json!("PRIVATE"));
    obj.insert("stackType".into(), json!("IPV4_ONLY"));
    let fp = super::backend_services::fingerprint(&obj);
    obj.insert("fingerprint".into(), json!(fp));
    obj
}

/// Resolves a subnetwork reference of an address or forwarding rule to the stored subnetwork.
/// GCE answers a reference to a subnetwork that does not exist with 400 `invalid` ("The
/// referenced subnetwork resource cannot be found."), not 404.
pub fn resolve<'a>(ctx: &'a Ctx<'_>, field: &str, value: &str) -> Result<&'a Value, ApiError> {
    let (scope, name) = ctx
        .urls
        .parse_ref(field, value, Kind::Subnetwork, Some(&ctx.region()))?;
    if scope != ctx.region() {
        return Err(ApiError::invalid_field(
            field,
            value,
            "The subnetwork must be in the same region as the resource.",
        ));
    }
    ctx.res.get(Kind::Subnetwork, &scope, &name).ok_or_else(|| {
        ApiError::invalid_field(
            field,
            &ctx.urls.rel(&scope, Kind::Subnetwork.collection(), &name),
            "The referenced subnetwork resource cannot be found.",
        )
    })
}

/// The subnetwork GCE picks when an internal address or rule names none: the network's
/// subnetwork in the region (an auto-mode network's is named like the network).
pub fn default_for<'a>(ctx: &'a Ctx<'_>, network_link: &str) -> Result<&'a Value, ApiError> {
    let name = network_link.rsplit('/').next().unwrap_or("default");
    if let Some(s) = ctx.res.get(Kind::Subnetwork, &ctx.region(), name)
        && s["network"] == network_link
    {
        return Ok(s);
    }
    ctx.res
        .iter(Kind::Subnetwork)
        .map(|(_, s)| s)
        .find(|s| s["network"] == network_link && s["region"] == ctx.urls.scope_link(&ctx.region()))
        .ok_or_else(|| ApiError::required("resource.subnetwork"))
}

/// The subnetwork's IPv4 range.
pub fn v4_range(sub: &Value) -> Option<Ipv4Net> {
    sub["ipCidrRange"].as_str().and_then(|r| r.parse().ok())
}

/// The subnetwork's IPv6 /64 and its access type (EXTERNAL or INTERNAL), if it has one.
pub fn v6_prefix(sub: &Value) -> Option<(Ipv6Net, &str)> {
    let access = sub["ipv6AccessType"].as_str()?;
    let field = if access == "EXTERNAL" {
        "externalIpv6Prefix"
    } else {
        "internalIpv6Prefix"
    };
    sub[field].as_str()?.parse().ok().map(|p| (p, access))
}

/// The base address of the first /96 of `prefix` that no address, forwarding rule or instance
/// holds (the first /96 is left to the subnet's own use, as GCE does).
pub fn allocate_v6(prefix: Ipv6Net, res: &Resources) -> Result<Ipv6Addr, ApiError> {
    let used: Vec<Ipv6Addr> = super::ips::used(res)
        .iter()
        .filter_map(|s| strip_len(s).parse::<IpAddr>().ok())
        .filter_map(|ip| match ip {
            IpAddr::V6(v6) => Some(v6),
            IpAddr::V4(_) => None,
        })
        .collect();
    prefix
        .subnets(IPV6_RANGE_LEN)
        .ok()
        .into_iter()
        .flatten()
        .skip(1)
        .find(|r| !used.iter().any(|u| r.contains(u)))
        .map(|r| r.network())
        .ok_or_else(|| {
            ApiError::new(
                403,
                "quotaExceeded",
                format!("No free IPv6 /96 left in {prefix} (svcnet-fake-gce)."),
            )
        })
}

/// `2001:db8::/96` -> `2001:db8::`.
pub fn strip_len(ip: &str) -> &str {
    ip.split_once('/').map_or(ip, |(a, _)| a)
}

/// selfLink of an address, forwarding rule or instance in `link`, blocking its deletion.
pub fn first_user(res: &Resources, link: &str) -> Option<String> {
    let uses = |v: &Value| {
        v["subnetwork"] == link
            || v["networkInterfaces"]
                .as_array()
                .is_some_and(|nics| nics.iter().any(|n| n["subnetwork"] == link))
    };
    [Kind::Address, Kind::ForwardingRule, Kind::Instance]
        .into_iter()
        .flat_map(|k| res.iter(k).map(|(_, v)| v))
        .find(|v| uses(v))
        .and_then(|v| v["selfLink"].as_str().map(str::to_string))
}
