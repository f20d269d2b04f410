//! Global firewall rules.
use serde_json::{Map, Value, json};

use super::{Ctx, default};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::scope::Scope;
use crate::validate;

pub fn prepare(ctx: &Ctx<'_>, mut obj: Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    let net = validate::opt_str(&obj, "network")?
        .unwrap_or("global/networks/default")
        .to_string();
    let net = ctx.existing_link("resource.network", &net, Kind::Network, Some(&Scope::Global))?;
    obj.insert("network".into(), json!(net));
    let priority = validate::opt_int(&obj, "priority", 0, 65535)?.unwrap_or(1000);
    obj.insert("priority".into(), json!(priority));
    default(&mut obj, "direction", json!("INGRESS"));
    let direction = validate::opt_str(&obj, "direction")?
        .unwrap_or("INGRESS")
        .to_string();
    validate::one_of("resource.direction", &direction, &["INGRESS", "EGRESS"])?;

    let allowed = rules(&obj, "allowed")?;
    let denied = rules(&obj, "denied")?;
    if allowed == 0 && denied == 0 {
        return Err(ApiError::required("resource.allowed"));
    }
    if allowed > 0 && denied > 0 {
        return Err(ApiError::invalid(
            "Firewall rules must have either allowed or denied, not both.",
        ));
    }
    for field in ["sourceRanges", "destinationRanges"] {
        for (i, r) in validate::opt_str_list(&obj, field)?.iter().enumerate() {
            validate::cidr(&format!("resource.{field}[{i}]"), r)?;
        }
    }
    for field in [
        "sourceTags",
        "targetTags",
        "sourceServiceAccounts",
        "targetServiceAccounts",
    ] {
        validate::opt_str_list(&obj, field)?;
    }
    let has_source = ["sourceRanges", "sourceTags", "sourceServiceAccounts"]
        .iter()
        .any(|f| {
            obj.get(*f)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        });
    if direction == "INGRESS" && !has_source {
        // GCE's documented default: no source given means every IPv4 source.
        obj.insert("sourceRanges".into(), json!(["0.0.0.0/0"]));
    }
    if direction == "EGRESS" && obj.get("destinationRanges").is_none_or(Value::is_null) {
        obj.insert("destinationRanges".into(), json!(["0.0.0.0/0"]));
    }
    default(&mut obj, "disabled", json!(false));
    default(&mut obj, "logConfig", json!({"enable": false}));
    Ok(obj)
}

/// Validates `allowed`/`denied` entries; returns how many there are.
fn rules(obj: &Map<String, Value>, field: &str) -> Result<usize, ApiError> {
    let Some(list) = obj.get(field).filter(|v| !v.is_null()) else {
        return Ok(0);
    };
    let list = list.as_array().ok_or_else(|| {
        ApiError::invalid_field(&format!("resource.{field}"), &list.to_string(), "Must be a list.")
    })?;
    for (i, rule) in list.iter().enumerate() {
        let proto_field = format!("resource.{field}[{i}].IPProtocol");
        let proto = rule["IPProtocol"]
            .as_str()
            .ok_or_else(|| ApiError::required(&proto_field))?;
        let proto = proto.to_ascii_lowercase();
        validate::firewall_protocol(&proto_field, &proto)?;
        let ports = rule
            .get("ports")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !ports.is_empty()
            && !matches!(
                proto.as_str(),
                "tcp" | "udp" | "sctp" | "all" | "6" | "17" | "132"
            )
        {
            return Err(ApiError::invalid_field(
                &format!("resource.{field}[{i}].ports"),
                &Value::Array(ports).to_string(),
                "Ports may only be specified for tcp, udp, sctp or all.",
            ));
        }
        for (j, p) in ports.iter().enumerate() {
            let pf = format!("resource.{field}[{i}].ports[{j}]");
            let p = p
                .as_str()
                .ok_or_else(|| ApiError::invalid_field(&pf, &p.to_string(), "Must be a string."))?;
            validate::port_range(&pf, p)?;
        }
    }
    Ok(list.len())
}
