//! Regional static addresses. `status` (RESERVED/IN_USE) and `users` are derived from the
//! forwarding rules that carry the same IP, as GCE reports them.
use serde_json::{Map, Value, json};

use super::{Ctx, default, ips};
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
            let pool = if addr_type == "EXTERNAL" {
                ctx.cfg.external_range
            } else {
                ctx.cfg.internal_range
            };
            let ip = ips::allocate(pool, ctx.res, &addr_type.to_ascii_lowercase())?;
            obj.insert("address".into(), json!(ip.to_string()));
        }
    }
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
