//! Service -> per-family ServicePorts, following upstream kube-proxy's serviceport.go semantics.

use std::net::IpAddr;

use ipnet::IpNet;
use k8s_openapi::api::core::v1::{Service, ServicePort as K8sPort, ServiceSpec};

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
    let ns = svc
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_string());
    let name = svc.metadata.name.clone().unwrap_or_default();
    let mut r = Reading {
        object: format!("{}/{}", printable(&ns), printable(&name)),
        family,
        errors: Vec::new(),
    };
    if !is_dns1123_label(&ns) {
        r.invalid("metadata.namespace", "not a DNS-1123 label");
        return (vec![], r.errors);
    }
    if !is_dns1035_label(&name) {
        r.invalid("metadata.name", "not a DNS-1035 label");
        return (vec![], r.errors);
    }
    if skip_reason(svc).is_some() {
        return (vec![], r.errors);
    }
    let Some(spec) = svc.spec.as_ref() else {
        return (vec![], r.errors);
    };
    let Some(cluster_ip) = r.cluster_ip(spec) else {
        return (vec![], r.errors); // not served in this family
    };
    let external_policy_local = etp_local(svc);
    // What every port of the Service shares; each port fills in its name, protocol and ports.
    let template = ServicePort {
        name: ServicePortName {
            namespace: ns,
            name,
            port: String::new(),
            protocol: Protocol::Tcp,
        },
        cluster_ip,
        port: 0,
        node_port: None,
        external_ips: r.ips(spec.external_ips.as_deref().unwrap_or(&[]), "spec.externalIPs"),
        load_balancer_vips: r.load_balancer_vips(svc),
        source_ranges: r.source_ranges(spec),
        session_affinity: r.session_affinity(spec),
        health_check_node_port: r.health_check_node_port(svc, spec, external_policy_local),
        external_policy_local,
        internal_policy_local: itp_local(svc),
    };
    let has_node_ports = is_type(svc, "NodePort") || is_type(svc, "LoadBalancer");
    let out = spec
        .ports
        .iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, p)| r.port(i, p, has_node_ports, &template))
        .collect();
    (out, r.errors)
}

/// One Service being converted for one family, and the errors found so far.
struct Reading {
    object: String,
    family: Family,
    errors: Vec<ModelError>,
}

impl Reading {
    fn invalid(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.errors
            .push(ModelError::invalid(KIND, &self.object, field, message));
    }

    /// The cluster IP of this family: clusterIPs when set (dual stack), else clusterIP.
    fn cluster_ip(&mut self, spec: &ServiceSpec) -> Option<IpAddr> {
        let candidates: Vec<String> = match &spec.cluster_ips {
            Some(ips) if !ips.is_empty() => ips.clone(),
            _ => spec.cluster_ip.iter().cloned().collect(),
        };
        for (i, s) in candidates.iter().enumerate() {
            match parse_ip_sloppy(s) {
                Some(ip) if self.family.matches(&ip) => return Some(ip),
                Some(_) => {}
                None => self.invalid(
                    format!("spec.clusterIPs[{i}]"),
                    format!("{:?} is not an IP address", printable(s)),
                ),
            }
        }
        None
    }

    fn ips(&mut self, raw: &[String], field: &str) -> Vec<IpAddr> {
        let mut out = Vec::new();
        for (i, s) in raw.iter().enumerate() {
            match parse_ip_sloppy(s) {
                Some(ip) if self.family.matches(&ip) => out.push(ip),
                Some(_) => {}
                None => self.invalid(
                    format!("{field}[{i}]"),
                    format!("{:?} is not an IP address; ignored", printable(s)),
                ),
            }
        }
        out
    }

    /// The load balancer's ingress IPs of this family that need VIP rules.
    fn load_balancer_vips(&mut self, svc: &Service) -> Vec<IpAddr> {
        let mut out = Vec::new();
        if !is_load_balancer(svc) {
            return out;
        }
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
                Some(ip) if self.family.matches(&ip) => out.push(ip),
                Some(_) => {}
                None => self.invalid(
                    format!("status.loadBalancer.ingress[{i}].ip"),
                    format!("{:?} is not an IP address", printable(ip)),
                ),
            }
        }
        out
    }

    fn source_ranges(&mut self, spec: &ServiceSpec) -> Option<Vec<IpNet>> {
        let ranges = spec
            .load_balancer_source_ranges
            .as_deref()
            .filter(|r| !r.is_empty())?;
        let mut out = Vec::new();
        for (i, r) in ranges.iter().enumerate() {
            match parse_cidr_sloppy(r.trim()) {
                Some(net) if self.family.matches(&net.addr()) => out.push(net),
                Some(_) => {}
                None => self.invalid(
                    format!("spec.loadBalancerSourceRanges[{i}]"),
                    format!(
                        "{:?} is not a CIDR; ignored (other ranges still apply, none means drop all)",
                        printable(r)
                    ),
                ),
            }
        }
        Some(out)
    }

    /// ClientIP affinity's timeout in seconds.
    fn session_affinity(&mut self, spec: &ServiceSpec) -> Option<u32> {
        if spec.session_affinity.as_deref() != Some("ClientIP") {
            return None;
        }
        let t = spec
            .session_affinity_config
            .as_ref()
            .and_then(|c| c.client_ip.as_ref())
            .and_then(|c| c.timeout_seconds);
        match t {
            None => Some(DEFAULT_AFFINITY_SECONDS),
            Some(t) if (1..=86400).contains(&t) => Some(t as u32),
            Some(t) => {
                self.invalid(
                    "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                    format!("{t} is outside 1..86400; using the default {DEFAULT_AFFINITY_SECONDS}"),
                );
                Some(DEFAULT_AFFINITY_SECONDS)
            }
        }
    }

    fn health_check_node_port(&mut self, svc: &Service, spec: &ServiceSpec, etp_local: bool) -> Option<u16> {
        if !(is_type(svc, "LoadBalancer") && etp_local) {
            return None;
        }
        match spec.health_check_node_port {
            Some(p) if (1..=65535).contains(&p) => Some(p as u16),
            Some(p) => {
                self.invalid("spec.healthCheckNodePort", format!("{p} is not a port"));
                None
            }
            None => None,
        }
    }

    /// `spec.ports[i]` on top of what all ports share; `None` (with an error) when it is invalid.
    fn port(
        &mut self,
        i: usize,
        p: &K8sPort,
        has_node_ports: bool,
        template: &ServicePort,
    ) -> Option<ServicePort> {
        let port_name = p.name.clone().unwrap_or_default();
        if !port_name.is_empty() && !is_dns1123_label(&port_name) {
            self.invalid(
                format!("spec.ports[{i}].name"),
                format!(
                    "{:?} is not a DNS-1123 label; port skipped",
                    printable(&port_name)
                ),
            );
            return None;
        }
        let proto_s = p.protocol.as_deref().unwrap_or("TCP");
        let Some(protocol) = Protocol::parse_k8s(proto_s) else {
            self.invalid(
                format!("spec.ports[{i}].protocol"),
                format!("{:?} is not TCP, UDP or SCTP; port skipped", printable(proto_s)),
            );
            return None;
        };
        let Some(port) = u16::try_from(p.port).ok().filter(|v| *v != 0) else {
            self.invalid(
                format!("spec.ports[{i}].port"),
                format!("{} is not a port", p.port),
            );
            return None;
        };
        let node_port = match p.node_port {
            Some(np) if has_node_ports && (1..=65535).contains(&np) => Some(np as u16),
            Some(np) if has_node_ports && np != 0 => {
                self.invalid(format!("spec.ports[{i}].nodePort"), format!("{np} is not a port"));
                None
            }
            _ => None,
        };
        Some(ServicePort {
            name: ServicePortName {
                port: port_name,
                protocol,
                ..template.name.clone()
            },
            port,
            node_port,
            ..template.clone()
        })
    }
}
