//! Object names exactly as upstream's nftables proxier computes them: stock chain, set and map names,
//! and per-service names `<prefix><HASH>-ns/name/proto/port[__ip/port]`, where HASH is the first 8
//! characters of base32(sha256(rest)) and the whole base is cut to 240 bytes (`hashAndTruncate`).

use data_encoding::BASE32;
use sha2::{Digest, Sha256};

use crate::model::{Endpoint, ServicePortName};

pub const TABLE: &str = "kube-proxy";

// Base chains (hooked): `<type>-<hook>`.
pub const FILTER_PREROUTING_PRE_DNAT: &str = "filter-prerouting-pre-dnat";
pub const FILTER_OUTPUT_PRE_DNAT: &str = "filter-output-pre-dnat";
pub const FILTER_INPUT: &str = "filter-input";
pub const FILTER_FORWARD: &str = "filter-forward";
pub const FILTER_OUTPUT: &str = "filter-output";
pub const NAT_PREROUTING: &str = "nat-prerouting";
pub const NAT_OUTPUT: &str = "nat-output";
pub const NAT_POSTROUTING: &str = "nat-postrouting";

// Regular top-level chains.
pub const SERVICES: &str = "services";
pub const SERVICE_ENDPOINTS_CHECK: &str = "service-endpoints-check";
pub const NODEPORT_ENDPOINTS_CHECK: &str = "nodeport-endpoints-check";
pub const REJECT_CHAIN: &str = "reject-chain";
pub const CLUSTER_IPS_CHECK: &str = "cluster-ips-check";
pub const FIREWALL_CHECK: &str = "firewall-check";
pub const MARK_MASQ: &str = "mark-for-masquerade";
pub const MASQUERADING: &str = "masquerading";

// Sets and verdict maps.
pub const SERVICE_IPS: &str = "service-ips";
pub const SERVICE_NODEPORTS: &str = "service-nodeports";
pub const NODEPORT_IPS: &str = "nodeport-ips";
pub const CLUSTER_IPS: &str = "cluster-ips";
pub const NO_ENDPOINT_SERVICES: &str = "no-endpoint-services";
pub const NO_ENDPOINT_NODEPORTS: &str = "no-endpoint-nodeports";
pub const FIREWALL_IPS: &str = "firewall-ips";

// Per-service prefixes.
pub const SERVICE_PREFIX: &str = "service-";
pub const LOCAL_PREFIX: &str = "local-";
pub const EXTERNAL_PREFIX: &str = "external-";
pub const ENDPOINT_PREFIX: &str = "endpoint-";
pub const AFFINITY_PREFIX: &str = "affinity-";
pub const FIREWALL_PREFIX: &str = "firewall-";

/// knftables' NameLengthMax (256) less the longest prefix allowance (16).
const BASE_LENGTH_MAX: usize = 240;

/// `HASH-name`, cut to [`BASE_LENGTH_MAX`] bytes ending in `...` when longer.
pub fn hash_and_truncate(name: &str) -> String {
    let encoded = BASE32.encode(&Sha256::digest(name.as_bytes()));
    let mut out = format!("{}-{name}", &encoded[..8]);
    if out.len() > BASE_LENGTH_MAX {
        // Validated names are ASCII; stay on a char boundary anyway.
        let mut cut = BASE_LENGTH_MAX - 3;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("...");
    }
    out
}

/// `HASH-ns/name/proto/port` (the port name may be empty: `ns/name/tcp/`).
pub fn service_base(name: &ServicePortName) -> String {
    hash_and_truncate(&format!(
        "{}/{}/{}/{}",
        name.namespace,
        name.name,
        name.protocol.as_str(),
        name.port
    ))
}

/// `HASH-ns/name/proto/port__ip/port` of an endpoint, its address printed canonically (as upstream's
/// endpoint cache prints it before naming).
pub fn endpoint_base(name: &ServicePortName, ep: &Endpoint) -> String {
    endpoint_base_of(name, &ep.ip.to_string(), ep.port)
}

/// `HASH-ns/name/proto/port__ip/port` for an address as text, colons of IPv6 turned into dots.
pub fn endpoint_base_of(name: &ServicePortName, ip: &str, port: u16) -> String {
    let ip = ip.replace(':', ".");
    hash_and_truncate(&format!(
        "{}/{}/{}/{}__{ip}/{port}",
        name.namespace,
        name.name,
        name.protocol.as_str(),
        name.port,
    ))
}

/// The per-service chains of one service port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceNames {
    pub cluster: String,
    pub local: String,
    pub external: String,
    pub firewall: String,
}

impl ServiceNames {
    pub fn new(name: &ServicePortName) -> ServiceNames {
        let base = service_base(name);
        ServiceNames {
            cluster: format!("{SERVICE_PREFIX}{base}"),
            local: format!("{LOCAL_PREFIX}{base}"),
            external: format!("{EXTERNAL_PREFIX}{base}"),
            firewall: format!("{FIREWALL_PREFIX}{base}"),
        }
    }
}

/// An endpoint's chain and affinity set.
pub fn endpoint_names(name: &ServicePortName, ep: &Endpoint) -> (String, String) {
    let base = endpoint_base(name, ep);
    (
        format!("{ENDPOINT_PREFIX}{base}"),
        format!("{AFFINITY_PREFIX}{base}"),
    )
}

/// Per-service chains carry a `/`; no stock chain does (upstream's `isServiceChainName`).
pub fn is_service_chain(name: &str) -> bool {
    name.contains('/')
}

pub fn is_affinity_set(name: &str) -> bool {
    name.starts_with(AFFINITY_PREFIX)
}

#[cfg(test)]
mod tests;
