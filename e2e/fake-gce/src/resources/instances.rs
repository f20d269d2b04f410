//! Zonal instances. Created and deleted only through the admin API (tests play the node VMs);
//! clients may get, list and setTags.
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Ctx, ips};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::scope::Scope;
use crate::validate;

/// Body of `POST /_fake/instances`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstanceSpec {
    pub name: String,
    pub zone: String,
    /// Spelled as in the API (`networkIP`); `networkIp` is accepted too.
    #[serde(default, rename = "networkIP", alias = "networkIp")]
    pub network_ip: Option<String>,
    #[serde(default, rename = "natIP", alias = "natIp")]
    pub nat_ip: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub machine_type: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub network: Option<String>,
    /// The NIC's internal IPv6 address (a dual-stack instance: `stackType` IPV4_IPV6, access type
    /// INTERNAL), as GCE shows it in `networkInterfaces[].ipv6Address`.
    #[serde(default)]
    pub ipv6_address: Option<String>,
}

/// The NIC's IPv6 address: the one given (IPv6 only), else the registered instance's.
fn ipv6_address(spec: &InstanceSpec, cur_nic: &Value) -> Result<Option<String>, ApiError> {
    Ok(match (&spec.ipv6_address, cur_nic["ipv6Address"].as_str()) {
        (Some(ip), _) => match validate::ip("ipv6Address", ip)? {
            std::net::IpAddr::V6(v6) => Some(v6.to_string()),
            std::net::IpAddr::V4(_) => {
                return Err(ApiError::invalid_field(
                    "ipv6Address",
                    ip,
                    "Must be a valid IPv6 address.",
                ));
            }
        },
        (None, cur) => cur.map(str::to_string),
    })
}

/// The instance's one NIC: IPv4-only, or dual-stack with an internal IPv6 address.
fn nic(net: &str, network_ip: &str, nat_ip: Option<String>, ipv6: Option<String>) -> Value {
    let mut nic = json!({
        "kind": "compute#networkInterface",
        "name": "nic0",
        "network": net,
        "networkIP": network_ip,
        "stackType": "IPV4_ONLY",
    });
    if let Some(v6) = ipv6 {
        nic["stackType"] = json!("IPV4_IPV6");
        nic["ipv6AccessType"] = json!("INTERNAL");
        nic["ipv6Address"] = json!(v6);
        nic["internalIpv6PrefixLength"] = json!(96);
    }
    if let Some(nat) = nat_ip {
        nic["accessConfigs"] = json!([{
            "kind": "compute#accessConfig",
            "type": "ONE_TO_ONE_NAT",
            "name": "External NAT",
            "natIP": nat,
            "networkTier": "PREMIUM",
        }]);
    }
    nic
}

/// Builds the GCE instance object (without id/selfLink/creationTimestamp, stamped by the caller).
pub fn from_spec(ctx: &Ctx<'_>, spec: &InstanceSpec) -> Result<Value, ApiError> {
    validate::name("name", &spec.name)?;
    let zone = Scope::Zone(spec.zone.clone());
    if !ctx.cfg.zones.contains(&spec.zone) {
        return Err(ApiError::not_found(&format!(
            "projects/{}/zones/{}",
            ctx.cfg.project, spec.zone
        )));
    }
    let status = spec.status.clone().unwrap_or_else(|| "RUNNING".into());
    validate::one_of(
        "status",
        &status,
        &[
            "PROVISIONING",
            "STAGING",
            "RUNNING",
            "STOPPING",
            "STOPPED",
            "SUSPENDING",
            "SUSPENDED",
            "REPAIRING",
            "TERMINATED",
        ],
    )?;
    let net = spec.network.as_deref().unwrap_or("global/networks/default");
    let net = ctx.existing_link("network", net, Kind::Network, Some(&Scope::Global))?;
    let own_link = ctx.urls.link(&zone, Kind::Instance, &spec.name);
    // Re-registering an instance keeps its addresses unless new ones are given.
    let current = ctx.res.find_by_link(Kind::Instance, &own_link);
    let cur_nic = current
        .map(|c| c["networkInterfaces"][0].clone())
        .unwrap_or(Value::Null);
    let network_ip = match (&spec.network_ip, cur_nic["networkIP"].as_str()) {
        (Some(ip), _) => {
            validate::ip("networkIP", ip)?;
            ip.clone()
        }
        (None, Some(ip)) => ip.to_string(),
        (None, None) => ips::allocate(ctx.cfg.internal_range, ctx.res, "internal")?.to_string(),
    };
    let nat_ip = match (&spec.nat_ip, cur_nic["accessConfigs"][0]["natIP"].as_str()) {
        (Some(ip), _) => Some(validate::ip("natIP", ip)?.to_string()),
        (None, cur) => cur.map(str::to_string),
    };
    let ipv6 = ipv6_address(spec, &cur_nic)?;
    let nic = nic(&net, &network_ip, nat_ip, ipv6);
    let machine = spec.machine_type.clone().unwrap_or_else(|| "e2-medium".into());
    let machine_link = if machine.contains('/') {
        machine
    } else {
        format!("{}/machineTypes/{machine}", ctx.urls.scope_link(&zone))
    };
    Ok(json!({
        "name": spec.name,
        "zone": ctx.urls.scope_link(&zone),
        "machineType": machine_link,
        "status": status,
        "canIpForward": true,
        "networkInterfaces": [nic],
        "tags": {"items": spec.tags, "fingerprint": fingerprint(&spec.tags)},
        "disks": [],
    }))
}

/// `setTags`: the fingerprint must match the current one when given (GCE answers 412 otherwise).
pub fn set_tags(current: &Value, body: &Value) -> Result<Value, ApiError> {
    let items: Vec<String> = body["items"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    for (i, t) in items.iter().enumerate() {
        validate::name(&format!("tags.items[{i}]"), t)?;
    }
    if let Some(fp) = body["fingerprint"].as_str()
        && current["tags"]["fingerprint"].as_str() != Some(fp)
    {
        return Err(ApiError::new(
            412,
            "conditionNotMet",
            "Supplied fingerprint does not match current metadata fingerprint.",
        ));
    }
    let mut next = current.clone();
    next["tags"] = json!({"items": items, "fingerprint": fingerprint(&items)});
    Ok(next)
}

/// Deterministic fingerprint of the tag list (base64 of a 64-bit FNV-1a hash), in the URL-safe alphabet
/// with padding: the discovery document's `format: byte`, which the official Rust client insists on (a
/// `/` or `+` fails its whole instance decode).
pub fn fingerprint(items: &[String]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in items.join(",").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    data_encoding::BASE64URL.encode(&h.to_be_bytes())
}
