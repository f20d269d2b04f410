//! EndpointSlices -> endpoints per service port, as upstream's endpointslicecache merges them.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::validate::{is_dns1035_label, is_dns1123_label, printable};
use super::{Endpoint, Family, ModelError, Protocol, ServicePortName};

pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
const KIND: &str = "EndpointSlice";

/// Merges all slices of `family`. Endpoints are deduplicated by `ip:port` (first slice by name wins)
/// and sorted by that string, so output never depends on watch order.
pub fn endpoints_from_slices<'a>(
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
    family: Family,
) -> (BTreeMap<ServicePortName, Vec<Endpoint>>, Vec<ModelError>) {
    let mut errors = Vec::new();
    let wanted = match family {
        Family::V4 => "IPv4",
        Family::V6 => "IPv6",
    };
    let mut sorted: Vec<&EndpointSlice> = slices.into_iter().filter(|s| s.address_type == wanted).collect();
    sorted.sort_by(|a, b| {
        (a.metadata.namespace.as_deref(), a.metadata.name.as_deref())
            .cmp(&(b.metadata.namespace.as_deref(), b.metadata.name.as_deref()))
    });

    let mut out: BTreeMap<ServicePortName, BTreeMap<String, Endpoint>> = BTreeMap::new();
    for slice in sorted {
        let ns = slice
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string());
        let slice_name = slice.metadata.name.clone().unwrap_or_default();
        let object = format!("{}/{}", printable(&ns), printable(&slice_name));
        let Some(svc) = slice
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(SERVICE_NAME_LABEL))
        else {
            continue; // not managed for a Service
        };
        if !is_dns1123_label(&ns) || !is_dns1035_label(svc) {
            errors.push(ModelError::invalid(
                KIND,
                &object,
                format!("metadata.labels[{SERVICE_NAME_LABEL}]"),
                "namespace or service name is not a valid label; slice ignored",
            ));
            continue;
        }
        for (pi, port) in slice.ports.iter().flatten().enumerate() {
            let port_name = port.name.clone().unwrap_or_default();
            if !port_name.is_empty() && !is_dns1123_label(&port_name) {
                errors.push(ModelError::invalid(
                    KIND,
                    &object,
                    format!("ports[{pi}].name"),
                    "not a DNS-1123 label; port ignored",
                ));
                continue;
            }
            let Some(protocol) = Protocol::parse_k8s(port.protocol.as_deref().unwrap_or("TCP")) else {
                errors.push(ModelError::invalid(
                    KIND,
                    &object,
                    format!("ports[{pi}].protocol"),
                    "not TCP, UDP or SCTP; port ignored",
                ));
                continue;
            };
            let Some(p) = port.port.and_then(|p| u16::try_from(p).ok()).filter(|p| *p != 0) else {
                continue; // upstream ignores ports without a number
            };
            let key = ServicePortName {
                namespace: ns.clone(),
                name: svc.clone(),
                port: port_name,
                protocol,
            };
            let entry = out.entry(key).or_default();
            for (ei, ep) in slice.endpoints.iter().enumerate() {
                let Some(addr) = ep.addresses.first() else {
                    continue;
                };
                let ip = match addr.parse::<IpAddr>() {
                    Ok(ip) if family.matches(&ip) => ip,
                    _ => {
                        if pi == 0 {
                            errors.push(ModelError::invalid(
                                KIND,
                                &object,
                                format!("endpoints[{ei}].addresses[0]"),
                                format!(
                                    "{:?} is not an {wanted} address; endpoint ignored",
                                    printable(addr)
                                ),
                            ));
                        }
                        continue;
                    }
                };
                let cond = ep.conditions.as_ref();
                let ready = cond.and_then(|c| c.ready).unwrap_or(true);
                let serving = cond.and_then(|c| c.serving).unwrap_or(true);
                let terminating = cond.and_then(|c| c.terminating).unwrap_or(false);
                let hints = ep.hints.as_ref();
                let e = Endpoint {
                    ip,
                    port: p,
                    ready,
                    serving,
                    terminating,
                    node_name: ep.node_name.clone(),
                    zone_hints: hints
                        .and_then(|h| h.for_zones.as_ref())
                        .map(|z| z.iter().map(|z| z.name.clone()).collect())
                        .unwrap_or_default(),
                    node_hints: hints
                        .and_then(|h| h.for_nodes.as_ref())
                        .map(|z| z.iter().map(|z| z.name.clone()).collect())
                        .unwrap_or_default(),
                };
                entry.entry(e.addr()).or_insert(e);
            }
        }
    }
    let out = out
        .into_iter()
        .map(|(k, v)| (k, v.into_values().collect()))
        .collect();
    (out, errors)
}
