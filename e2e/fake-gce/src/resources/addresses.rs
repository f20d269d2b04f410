//! Regional static addresses. `status` (RESERVED/IN_USE) and `users` are derived from the
//! forwarding rules that carry the same IP, as GCE reports them.
use serde_json::{Map, Value, json};

use super::{Ctx, default, ips, subnetworks};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::store::Resources;
use crate::validate;

pub fn prepare(
    ctx: &Ctx<'_>,
    mut obj: Map<String, Value>,
    existing: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    default(&mut obj, "addressType", json!("EXTERNAL"));
    let addr_type = validate::opt_str(&obj, "addressType")?
        .unwrap_or("EXTERNAL")
        .to_string();
    validate::one_of("resource.addressType", &addr_type, &["EXTERNAL", "INTERNAL"])?;
    if addr_type == "EXTERNAL" {
        default(&mut obj, "networkTier", json!("PREMIUM"));
        let tier = validate::opt_str(&obj, "networkTier")?
            .unwrap_or("PREMIUM")
            .to_string();
        validate::one_of("resource.networkTier", &tier, &["PREMIUM", "STANDARD"])?;
    }
    let own_link = existing.and_then(|e| e["selfLink"].as_str());
    let sub = subnetwork(ctx, &mut obj, &addr_type)?;
    let version = validate::opt_str(&obj, "ipVersion")?
        .unwrap_or("IPV4")
        .to_string();
    validate::one_of("resource.ipVersion", &version, &["IPV4", "IPV6"])?;
    if version == "IPV6" {
        return v6(ctx, obj, sub, &addr_type, own_link);
    }
    match validate::opt_str(&obj, "address")? {
        Some(ip) => {
            validate::ip("resource.address", ip)?;
            let taken = ctx
                .res
                .iter(Kind::Address)
                .map(|(_, a)| a)
                .any(|a| a["address"] == ip && a["selfLink"].as_str() != own_link);
            if taken {
                return Err(ApiError::invalid_field(
                    "resource.address",
                    ip,
                    "Specified IP address is in-use and would result in a conflict.",
                ));
            }
        }
        None => {
            let pool = match sub {
                Some(sub) => subnetworks::v4_range(sub).unwrap_or(ctx.cfg.internal_range),
                None if addr_type == "EXTERNAL" => ctx.cfg.external_range,
                None => ctx.cfg.internal_range,
            };
            let ip = ips::allocate(pool, ctx.res, &addr_type.to_ascii_lowercase())?;
            obj.insert("address".into(), json!(ip.to_string()));
        }
    }
    obj.insert("status".into(), json!("RESERVED"));
    obj.remove("users");
    Ok(obj)
}

/// The address's subnetwork, which must exist: named, or (INTERNAL) the default network's one in
/// the region. EXTERNAL IPv4 addresses have none.
fn subnetwork<'a>(
    ctx: &'a Ctx<'_>,
    obj: &mut Map<String, Value>,
    addr_type: &str,
) -> Result<Option<&'a Value>, ApiError> {
    let sub = match validate::opt_str(obj, "subnetwork")? {
        Some(s) => Some(subnetworks::resolve(ctx, "resource.subnetwork", s)?),
        None if addr_type == "INTERNAL" => {
            let net = ctx
                .urls
                .link(&crate::scope::Scope::Global, Kind::Network, "default");
            subnetworks::default_for(ctx, &net).ok()
        }
        None => None,
    };
    if let Some(s) = sub {
        obj.insert("subnetwork".into(), s["selfLink"].clone());
    }
    Ok(sub)
}

/// An IPv6 address: a /96 of the subnetwork's prefix of the address type's access type
/// (`prefixLength` 96), as GCE reserves them for IPv6 forwarding rules.
fn v6(
    ctx: &Ctx<'_>,
    mut obj: Map<String, Value>,
    sub: Option<&Value>,
    addr_type: &str,
    own_link: Option<&str>,
) -> Result<Map<String, Value>, ApiError> {
    let sub = sub.ok_or_else(|| ApiError::required("resource.subnetwork"))?;
    let prefix = match subnetworks::v6_prefix(sub) {
        Some((p, access)) if access == addr_type => p,
        _ => {
            return Err(ApiError::invalid_field(
                "resource.subnetwork",
                sub["selfLink"].as_str().unwrap_or_default(),
                &format!(
                    "The subnetwork does not have an {addr_type} IPv6 range (ipv6AccessType {addr_type})."
                ),
            ));
        }
    };
    let ip = match validate::opt_str(&obj, "address")? {
        Some(a) => {
            let plain = subnetworks::strip_len(a);
            let ok = matches!(validate::ip("resource.address", plain)?, std::net::IpAddr::V6(v) if prefix.contains(&v));
            if !ok {
                return Err(ApiError::invalid_field(
                    "resource.address",
                    a,
                    "The IPv6 address is not in the subnetwork's IPv6 range.",
                ));
            }
            let taken = ctx
                .res
                .iter(Kind::Address)
                .any(|(_, o)| o["address"] == plain && o["selfLink"].as_str() != own_link);
            if taken {
                return Err(ApiError::invalid_field(
                    "resource.address",
                    a,
                    "Specified IP address is in-use and would result in a conflict.",
                ));
            }
            plain.to_string()
        }
        None => subnetworks::allocate_v6(prefix, ctx.res)?.to_string(),
    };
    obj.insert("address".into(), json!(ip));
    obj.insert("prefixLength".into(), json!(subnetworks::IPV6_RANGE_LEN));
    obj.insert("status".into(), json!("RESERVED"));
    obj.remove("users");
    Ok(obj)
}

pub fn refresh(res: &mut Resources) {
    // (region URL, IP) -> forwarding rules using it; built once so a refresh is linear.
    let mut by_ip: std::collections::HashMap<(String, String), Vec<String>> =
        std::collections::HashMap::new();
    for (_, fr) in res.iter(Kind::ForwardingRule) {
        if let (Some(region), Some(ip), Some(link)) = (
            fr["region"].as_str(),
            fr["IPAddress"].as_str(),
            fr["selfLink"].as_str(),
        ) {
            by_ip
                .entry((region.to_string(), ip.to_string()))
                .or_default()
                .push(link.to_string());
            // IPv6 rules hold their address in CIDR form (ADDR/96).
            if ip.contains('/') {
                by_ip
                    .entry((region.to_string(), subnetworks::strip_len(ip).to_string()))
                    .or_default()
                    .push(link.to_string());
            }
        }
    }
    for addr in res.map_mut(Kind::Address).values_mut() {
        let k = (
            addr["region"].as_str().unwrap_or_default().to_string(),
            addr["address"].as_str().unwrap_or_default().to_string(),
        );
        let users = by_ip.get(&k).cloned().unwrap_or_default();
        if let Some(obj) = addr.as_object_mut() {
            if users.is_empty() {
                obj.insert("status".into(), json!("RESERVED"));
                obj.remove("users");
            } else {
                obj.insert("status".into(), json!("IN_USE"));
                obj.insert("users".into(), json!(users));
            }
        }
    }
}
