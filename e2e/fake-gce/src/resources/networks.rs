//! Global networks. The `default` network exists from the start.
use serde_json::{Map, Value, json};

use super::{Ctx, default};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::store::Resources;
use crate::validate;

pub fn prepare(_ctx: &Ctx<'_>, mut obj: Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    let legacy = validate::opt_str(&obj, "IPv4Range")?;
    if let Some(r) = legacy {
        validate::cidr("resource.IPv4Range", r)?;
    }
    if legacy.is_none() {
        default(&mut obj, "autoCreateSubnetworks", json!(true));
    }
    default(&mut obj, "routingConfig", json!({"routingMode": "REGIONAL"}));
    default(&mut obj, "mtu", json!(1460));
    Ok(obj)
}

/// The `default` network as a fresh project has it (before id/selfLink are stamped).
pub fn default_network() -> Map<String, Value> {
    let mut obj = Map::new();
    obj.insert("name".into(), json!("default"));
    obj.insert("description".into(), json!("Default network for the project"));
    obj.insert("autoCreateSubnetworks".into(), json!(true));
    obj.insert("routingConfig".into(), json!({"routingMode": "REGIONAL"}));
    obj.insert("mtu".into(), json!(1460));
    obj
}

pub fn first_user(res: &Resources, link: &str) -> Option<String> {
    let uses = |v: &Value| {
        v["network"] == link
            || v["networkInterfaces"]
                .as_array()
                .is_some_and(|nics| nics.iter().any(|n| n["network"] == link))
    };
    [Kind::Firewall, Kind::Route, Kind::Instance, Kind::Subnetwork]
        .into_iter()
        .flat_map(|k| res.iter(k).map(|(_, v)| v))
        .find(|v| uses(v))
        .and_then(|v| v["selfLink"].as_str().map(str::to_string))
}
