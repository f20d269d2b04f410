//! Global static routes (the route controller's podCIDR -> instance routes).
use serde_json::{Map, Value, json};

use super::{Ctx, default};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::scope::Scope;
use crate::validate;

const NEXT_HOPS: [&str; 6] = [
    "nextHopInstance",
    "nextHopIp",
    "nextHopGateway",
    "nextHopNetwork",
    "nextHopIlb",
    "nextHopVpnTunnel",
];

pub fn prepare(ctx: &Ctx<'_>, mut obj: Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    let net = validate::opt_str(&obj, "network")?.ok_or_else(|| ApiError::required("resource.network"))?;
    let net = ctx.existing_link("resource.network", net, Kind::Network, Some(&Scope::Global))?;
    obj.insert("network".into(), json!(net));
    let dest =
        validate::opt_str(&obj, "destRange")?.ok_or_else(|| ApiError::required("resource.destRange"))?;
    validate::cidr("resource.destRange", dest)?;
    let priority = validate::opt_int(&obj, "priority", 0, 65535)?.unwrap_or(1000);
    obj.insert("priority".into(), json!(priority));
    validate::opt_str_list(&obj, "tags")?;

    let hops: Vec<&str> = NEXT_HOPS
        .iter()
        .copied()
        .filter(|f| obj.get(*f).is_some_and(|v| !v.is_null()))
        .collect();
    match hops.as_slice() {
        [] => return Err(ApiError::required("resource.nextHop")),
        [_] => {}
        _ => {
            return Err(ApiError::invalid(format!(
                "Exactly one next hop may be specified, got {hops:?}."
            )));
        }
    }
    if let Some(inst) = validate::opt_str(&obj, "nextHopInstance")? {
        let link = ctx.existing_link("resource.nextHopInstance", inst, Kind::Instance, None)?;
        obj.insert("nextHopInstance".into(), json!(link));
    }
    if let Some(ip) = validate::opt_str(&obj, "nextHopIp")? {
        validate::ip("resource.nextHopIp", ip)?;
    }
    if let Some(n) = validate::opt_str(&obj, "nextHopNetwork")? {
        let link = ctx.existing_link("resource.nextHopNetwork", n, Kind::Network, Some(&Scope::Global))?;
        obj.insert("nextHopNetwork".into(), json!(link));
    }
    default(&mut obj, "routeType", json!("STATIC"));
    Ok(obj)
}
