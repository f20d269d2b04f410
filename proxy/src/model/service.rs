//! Service -> per-family ServicePorts, following upstream kube-proxy's serviceport.go semantics.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::Service;

use svcnet_core::service::{
    HEADLESS_LABEL, SERVICE_PROXY_NAME_LABEL, external_policy_local as etp_local,
    internal_policy_local as itp_local, is_load_balancer,
};

use super::ip::{parse_cidr_sloppy, parse_ip_sloppy};
use super::validate::{is_dns1035_label, is_dns1123_label, printable};
use super::{Family, ModelError, Protocol, ServicePort, ServicePortName};
const DEFAULT_AFFINITY_SECONDS: u32 = 10800;
const KIND: &str = "Service";

/// Why a service gets no rules at all, without being wrong.
pub fn skip_reason(svc: &Service) -> Option<&'static str> {
    let labels = svc.metadata.labels.as_ref();
    if labels.is_some_and(|l| l.contains_key(SERVICE_PROXY_NAME_LABEL)) {
        return Some("labelled service.kubernetes.io/service-proxy-name (handled by another proxy)");
    }
    if labels.is_some_and(|l| l.contains_key(HEADLESS_LABEL)) {
        return Some("labelled service.kubernetes.io/headless");
    }
    let spec = svc.spec.as_ref()?;
    if spec.type_.as_deref() == Some("ExternalName") {
        return Some("type ExternalName (DNS only)");
    }
    match spec.cluster_ip.as_deref() {
        None | Some("") | Some("None") => Some("headless (no cluster IP)"),
        _ => None,
    }
}

fn is_type(svc: &Service, t: &str) -> bool {
    svc.spec
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("ClusterIP")
        == t
}

/// Converts one Service into its ports for `family`: the ports it could build, and an error naming
/// the field for every part it had to leave out (all of them: a bad port never hides the others, and
/// an error on identity, such as the names, leaves the whole Service out).
pub fn service_ports_from_service(svc: &Service, family: Family) -> (Vec<ServicePort>, Vec<ModelError>) {
    let mut errors = Vec::new();
    let ns = svc
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_string());
    let name = svc.metadata.name.clone().unwrap_or_default();
    let object = format!("{}/{}", printable(&ns), printable(&name));
    if !is_dns1123_label(&ns) {
        errors.push(ModelError::invalid(
            KIND,
            &object,
            "metadata.namespace",
            "not a DNS-1123 label",
        ));
        return (vec![], errors);
    }
    if !is_dns1035_label(&name) {
        errors.push(ModelError::invalid(
            KIND,
            &object,
            "metadata.name",
            "not a DNS-1035 label",
        ));
        return (vec![], errors);
    }
    if skip_reason(svc).is_some() {
        return (vec![], errors);
    }
    let Some(spec) = svc.spec.as_ref() else {
        return (vec![], errors);
    };

    // Cluster IP of this family: clusterIPs when set (dual stack), else clusterIP.
    let candidates: Vec<String> = match &spec.cluster_ips {
        Some(ips) if !ips.is_empty() => ips.clone(),
        _ => spec.cluster_ip.iter().cloned().collect(),
    };
    let mut cluster_ip = None;
    for (i, s) in candidates.iter().enumerate() {
        match parse_ip_sloppy(s) {
            Some(ip) if family.matches(&ip) => {
                cluster_ip = Some(ip);
                break;
            }
            Some(_) => {}
            None => errors.push(ModelError::invalid(
                KIND,
                &object,
                format!("spec.clusterIPs[{i}]"),
                format!("{:?} is not an IP address", printable(s)),
            )),
        }
    }
    let Some(cluster_ip) = cluster_ip else {
        return (vec![], errors); // not served in this family
    };

    let external_ips = parse_ips(
        spec.external_ips.as_deref().unwrap_or(&[]),
        family,
        &object,
        "spec.externalIPs",
        &mut errors,
    );

    let mut load_balancer_vips = Vec::new();
    if is_load_balancer(svc) {
        let ingress = svc
            .status
            .as_ref()
            .and_then(|s| s.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.as_ref());
        for (i, ing) in ingress.into_iter().flatten().enumerate() {
            let Some(ip) = ing.ip.as_deref().filter(|s| !s.is_empty()) else {
                continue;
            };
            // ipMode Proxy: the load balancer delivers to the node with the node as destination.
            if ing.ip_mode.as_deref() == Some("Proxy") {
                continue;
            }
            match parse_ip_sloppy(ip) {
                Some(ip) if family.matches(&ip) => load_balancer_vips.push(ip),
                Some(_) => {}
                None => errors.push(ModelError::invalid(
                    KIND,
                    &object,
                    format!("status.loadBalancer.ingress[{i}].ip"),
                    format!("{:?} is not an IP address", printable(ip)),
                )),
            }
        }
    }

    let source_ranges = match spec.load_balancer_source_ranges.as_deref() {
        Some(ranges) if !ranges.is_empty() => {
            let mut out = Vec::new();
            for (i, r) in ranges.iter().enumerate() {
                match parse_cidr_sloppy(r.trim()) {
                    Some(net) if family.matches(&net.addr()) => out.push(net),
                    Some(_) => {}
                    None => errors.push(ModelError::invalid(
                        KIND,
                        &object,
                        format!("spec.loadBalancerSourceRanges[{i}]"),
                        format!(
                            "{:?} is not a CIDR; ignored (other ranges still apply, none means drop all)",
                            printable(r)
                        ),
                    )),
                }
            }
            Some(out)
        }
        _ => None,
    };

    let session_affinity = if spec.session_affinity.as_deref() == Some("ClientIP") {
        let t = spec
            .session_affinity_config
            .as_ref()
            .and_then(|c| c.client_ip.as_ref())
            .and_then(|c| c.timeout_seconds);
        match t {
            None => Some(DEFAULT_AFFINITY_SECONDS),
            Some(t) if (1..=86400).contains(&t) => Some(t as u32),
            Some(t) => {
                errors.push(ModelError::invalid(
                    KIND,
                    &object,
                    "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                    format!("{t} is outside 1..86400; using the default {DEFAULT_AFFINITY_SECONDS}"),
                ));
                Some(DEFAULT_AFFINITY_SECONDS)
            }
        }
    } else {
        None
    };

    let external_policy_local = etp_local(svc);
    let internal_policy_local = itp_local(svc);
    let has_node_ports = is_type(svc, "NodePort") || is_type(svc, "LoadBalancer");
    let health_check_node_port = if is_type(svc, "LoadBalancer") && external_policy_local {
        match spec.health_check_node_port {
            Some(p) if (1..=65535).contains(&p) => Some(p as u16),
            Some(p) => {
                errors.push(ModelError::invalid(
                    KIND,
                    &object,
                    "spec.healthCheckNodePort",
                    format!("{p} is not a port"),
                ));
                None
            }
            None => None,
        }
    } else {
        None
    };

    let mut out = Vec::new();
    for (i, p) in spec.ports.iter().flatten().enumerate() {
        let port_name = p.name.clone().unwrap_or_default();
        if !port_name.is_empty() && !is_dns1123_label(&port_name) {
            errors.push(ModelError::invalid(
                KIND,
                &object,
                format!("spec.ports[{i}].name"),
                format!(
                    "{:?} is not a DNS-1123 label; port skipped",
                    printable(&port_name)
                ),
            ));
            continue;
        }
        let proto_s = p.protocol.as_deref().unwrap_or("TCP");
        let Some(protocol) = Protocol::parse_k8s(proto_s) else {
            errors.push(ModelError::invalid(
                KIND,
                &object,
                format!("spec.ports[{i}].protocol"),
                format!("{:?} is not TCP, UDP or SCTP; port skipped", printable(proto_s)),
            ));
            continue;
        };
        let Ok(port) = u16::try_from(p.port)
            .map_err(|_| ())
            .and_then(|v| if v == 0 { Err(()) } else { Ok(v) })
        else {
            errors.push(ModelError::invalid(
                KIND,
                &object,
                format!("spec.ports[{i}].port"),
                format!("{} is not a port", p.port),
            ));
            continue;
        };
        let node_port = match p.node_port {
            Some(np) if has_node_ports && (1..=65535).contains(&np) => Some(np as u16),
            Some(np) if has_node_ports && np != 0 => {
                errors.push(ModelError::invalid(
                    KIND,
                    &object,
                    format!("spec.ports[{i}].nodePort"),
                    format!("{np} is not a port"),
                ));
                None
            }
            _ => None,
        };
        out.push(ServicePort {
            name: ServicePortName {
                namespace: ns.clone(),
                name: name.clone(),
                port: port_name,
                protocol,
            },
            cluster_ip,
            port,
            node_port,
            external_ips: external_ips.clone(),
            load_balancer_vips: load_balancer_vips.clone(),
            source_ranges: source_ranges.clone(),
            health_check_node_port,
            session_affinity,
            external_policy_local,
            internal_policy_local,
        });
    }
    (out, errors)
}

fn parse_ips(
    raw: &[String],
    family: Family,
    object: &str,
    field: &str,
    errors: &mut Vec<ModelError>,
) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for (i, s) in raw.iter().enumerate() {
        match parse_ip_sloppy(s) {
            Some(ip) if family.matches(&ip) => out.push(ip),
            Some(_) => {}
            None => errors.push(ModelError::invalid(
                KIND,
                object,
                format!("{field}[{i}]"),
                format!("{:?} is not an IP address; ignored", printable(s)),
            )),
        }
    }
    out
}
