//! Regional forwarding rules pointing at target pools (network load balancing).
use serde_json::{Map, Value, json};

use super::{Ctx, default, ips};
use crate::errors::ApiError;
use crate::store::{Kind, Scope};
use crate::validate;

const PROTOCOLS: [&str; 7] = ["TCP", "UDP", "ESP", "AH", "SCTP", "ICMP", "L3_DEFAULT"];

pub fn prepare(
    ctx: &Ctx<'_>,
    scope: &Scope,
    mut obj: Map<String, Value>,
    existing: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    default(&mut obj, "IPProtocol", json!("TCP"));
    let proto = validate::opt_str(&obj, "IPProtocol")?
        .unwrap_or("TCP")
        .to_string();
    validate::one_of("resource.IPProtocol", &proto, &PROTOCOLS)?;
    default(&mut obj, "loadBalancingScheme", json!("EXTERNAL"));
    let scheme = validate::opt_str(&obj, "loadBalancingScheme")?
        .unwrap_or("EXTERNAL")
        .to_string();
    default(&mut obj, "networkTier", json!("PREMIUM"));
    let tier = validate::opt_str(&obj, "networkTier")?
        .unwrap_or("PREMIUM")
        .to_string();
    validate::one_of("resource.networkTier", &tier, &["PREMIUM", "STANDARD"])?;

    let (lo, hi) = ports(&mut obj)?;

    match validate::opt_str(&obj, "target")? {
        Some(t) => {
            let link = ctx.existing_link("resource.target", t, Kind::TargetPool, Some(scope))?;
            obj.insert("target".into(), json!(link));
        }
        None if obj.get("backendService").is_some_and(|v| !v.is_null()) => {}
        None => return Err(ApiError::required("resource.target")),
    }

    let ip = match validate::opt_str(&obj, "IPAddress")? {
        None | Some("") => {
            let pool = if scheme == "EXTERNAL" {
                ctx.cfg.external_range
            } else {
                ctx.cfg.internal_range
            };
            ips::allocate(pool, ctx.res, "external")?.to_string()
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
    };
    // Two rules may share an IP only on different protocols or disjoint port ranges.
    let own = existing.and_then(|e| e["selfLink"].as_str());
    for (_, other) in ctx.res.iter(Kind::ForwardingRule) {
        if other["IPAddress"] != ip.as_str()
            || other["selfLink"].as_str() == own
            || other["IPProtocol"] != proto.as_str()
        {
            continue;
        }
        let (olo, ohi) = other["portRange"]
            .as_str()
            .and_then(|r| validate::port_range("portRange", r).ok())
            .unwrap_or((1, 65535));
        if olo <= hi && lo <= ohi {
            return Err(ApiError::invalid_field(
                "resource.IPAddress",
                &ip,
                "Specified IP address is in-use and would result in a conflict.",
            ));
        }
    }
    obj.insert("IPAddress".into(), json!(ip));
    Ok(obj)
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
