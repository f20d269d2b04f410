//! EndpointSlices -> endpoints per service port, as upstream's endpointslicecache merges them, in two
//! steps: each slice is parsed and validated on its own once ([`parse_slice`], when its watch event
//! arrives in the daemon), and the slices of one Service are merged ([`merge_slices`]) whenever that
//! set changes. [`endpoints_from_slices`] does both for API objects read from files.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use k8s_openapi::api::discovery::v1::{Endpoint as SliceEndpoint, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::intern::Interner;
use super::ip::parse_ip_sloppy;
use super::record::{SlicePort, SliceRecord, slim_meta};
use super::validate::{is_dns1035_label, is_dns1123_label, printable};
use super::{Endpoint, Endpoints, Family, Hints, ModelError, Protocol, ServicePortName};

pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// Annotation the EndpointSlice controller sets to the time of the Pod/Service change it reflects.
pub const TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";
const KIND: &str = "EndpointSlice";

/// The family of an `addressType`; `None` for FQDN (and anything unknown), which the proxy ignores.
fn address_family(address_type: &str) -> Option<Family> {
    match address_type {
        "IPv4" => Some(Family::V4),
        "IPv6" => Some(Family::V6),
        _ => None,
    }
}

/// The slice's trigger time, when present and well formed (RFC 3339).
pub(crate) fn trigger_time(slice: &EndpointSlice) -> Option<SystemTime> {
    let text = slice
        .metadata
        .annotations
        .as_ref()?
        .get(TRIGGER_TIME_ANNOTATION)?;
    let ts: k8s_openapi::jiff::Timestamp = text.parse().ok()?;
    Some(SystemTime::from(ts))
}

/// Parses one slice for its own address type. Endpoints of one port are deduplicated by `ip:port`
/// (first wins) and sorted by that string; errors name the slice and the field.
pub fn parse_slice(slice: &EndpointSlice, names: &mut Interner) -> SliceRecord {
    let mut rec = SliceRecord {
        meta: slim_meta(&slice.metadata),
        family: address_family(&slice.address_type),
        service_name: String::new(),
        trigger_time: trigger_time(slice),
        ports: Vec::new(),
        errors: Vec::new(),
    };
    let Some(family) = rec.family else {
        return rec;
    };
    let ns = slice.metadata.namespace.as_deref().unwrap_or("default");
    let object = format!(
        "{}/{}",
        printable(ns),
        printable(slice.metadata.name.as_deref().unwrap_or_default())
    );
    let Some(svc) = slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SERVICE_NAME_LABEL))
    else {
        return rec; // not managed for a Service
    };
    rec.service_name.clone_from(svc);
    if !is_dns1123_label(ns) || !is_dns1035_label(svc) {
        rec.errors.push(ModelError::invalid(
            KIND,
            &object,
            format!("metadata.labels[{SERVICE_NAME_LABEL}]"),
            "namespace or service name is not a valid label; slice ignored",
        ));
        return rec;
    }
    for (pi, port) in slice.ports.iter().flatten().enumerate() {
        let port_name = port.name.clone().unwrap_or_default();
        if !port_name.is_empty() && !is_dns1123_label(&port_name) {
            rec.errors.push(ModelError::invalid(
                KIND,
                &object,
                format!("ports[{pi}].name"),
                "not a DNS-1123 label; port ignored",
            ));
            continue;
        }
        let Some(protocol) = Protocol::parse_k8s(port.protocol.as_deref().unwrap_or("TCP")) else {
            rec.errors.push(ModelError::invalid(
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
        // Bad addresses are reported once per endpoint, not once per port.
        let errors = (pi == 0).then_some(&mut rec.errors);
        let endpoints = port_endpoints(slice, p, family, names, (&object, errors));
        rec.ports.push(SlicePort {
            name: ServicePortName {
                namespace: ns.to_string(),
                name: svc.clone(),
                port: port_name,
                protocol,
            },
            endpoints,
        });
    }
    // The record lives as long as the slice: no spare capacity.
    rec.ports.shrink_to_fit();
    rec.errors.shrink_to_fit();
    rec
}

/// The slice's endpoints on port number `port`, deduplicated by `ip:port` (first wins) and sorted by
/// that string. Addresses not of `family` are reported into `errors` when given (naming `object`).
fn port_endpoints(
    slice: &EndpointSlice,
    port: u16,
    family: Family,
    names: &mut Interner,
    (object, mut errors): (&str, Option<&mut Vec<ModelError>>),
) -> Endpoints {
    let mut by_addr: BTreeMap<String, Endpoint> = BTreeMap::new();
    for (ei, ep) in slice.endpoints.iter().enumerate() {
        let Some(addr) = ep.addresses.first() else {
            continue;
        };
        let ip = match parse_ip_sloppy(addr) {
            Some(ip) if family.matches(&ip) => ip,
            _ => {
                if let Some(errors) = errors.as_deref_mut() {
                    errors.push(ModelError::invalid(
                        KIND,
                        object,
                        format!("endpoints[{ei}].addresses[0]"),
                        format!(
                            "{:?} is not an {} address; endpoint ignored",
                            printable(addr),
                            family.label()
                        ),
                    ));
                }
                continue;
            }
        };
        let e = endpoint(ep, ip, port, names);
        by_addr.entry(e.addr()).or_insert(e);
    }
    by_addr.into_values().collect()
}

/// One endpoint of a slice at `ip:port`, with the conditions' defaults upstream applies.
fn endpoint(ep: &SliceEndpoint, ip: IpAddr, port: u16, names: &mut Interner) -> Endpoint {
    let cond = ep.conditions.as_ref();
    let hints = ep.hints.as_ref().map(|h| Hints {
        zones: h.for_zones.iter().flatten().map(|z| z.name.clone()).collect(),
        nodes: h.for_nodes.iter().flatten().map(|n| n.name.clone()).collect(),
    });
    Endpoint {
        ip,
        port,
        ready: cond.and_then(|c| c.ready).unwrap_or(true),
        serving: cond.and_then(|c| c.serving).unwrap_or(true),
        terminating: cond.and_then(|c| c.terminating).unwrap_or(false),
        node_name: ep.node_name.as_deref().map(|n| names.get(n)),
        hints: hints
            .filter(|h| !h.zones.is_empty() || !h.nodes.is_empty())
            .map(Box::new),
    }
}

fn order_key(meta: &ObjectMeta) -> (Option<&str>, Option<&str>) {
    (meta.namespace.as_deref(), meta.name.as_deref())
}

/// Merges parsed slices of `family` (others are left out). Endpoints of one service port are
/// deduplicated by `ip:port`, the slice first by namespace/name winning, and sorted by that string, so
/// the output never depends on watch order. A port fed by a single slice shares that slice's list.
pub fn merge_slices<'a>(
    slices: impl IntoIterator<Item = &'a SliceRecord>,
    family: Family,
) -> (BTreeMap<ServicePortName, Endpoints>, Vec<ModelError>) {
    let mut sorted: Vec<&SliceRecord> = slices.into_iter().filter(|s| s.family == Some(family)).collect();
    sorted.sort_by(|a, b| order_key(&a.meta).cmp(&order_key(&b.meta)));
    let mut errors = Vec::new();
    let mut parts: BTreeMap<&ServicePortName, Vec<&Endpoints>> = BTreeMap::new();
    for s in sorted {
        errors.extend(s.errors.iter().cloned());
        for p in &s.ports {
            parts.entry(&p.name).or_default().push(&p.endpoints);
        }
    }
    let merged = parts
        .into_iter()
        .map(|(name, lists)| {
            let eps = match lists.as_slice() {
                [one] => Arc::clone(one),
                _ => {
                    let mut by_addr: BTreeMap<String, &Endpoint> = BTreeMap::new();
                    for e in lists.iter().flat_map(|l| l.iter()) {
                        by_addr.entry(e.addr()).or_insert(e);
                    }
                    by_addr.into_values().cloned().collect()
                }
            };
            (name.clone(), eps)
        })
        .collect();
    (merged, errors)
}

/// Parses and merges API objects: all slices of `family`.
pub fn endpoints_from_slices<'a>(
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
    family: Family,
) -> (BTreeMap<ServicePortName, Endpoints>, Vec<ModelError>) {
    let mut names = Interner::default();
    let records: Vec<SliceRecord> = slices
        .into_iter()
        .filter(|s| address_family(&s.address_type) == Some(family))
        .map(|s| parse_slice(s, &mut names))
        .collect();
    merge_slices(&records, family)
}

#[cfg(test)]
mod tests;
