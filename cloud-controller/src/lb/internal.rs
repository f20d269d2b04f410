//! Internal passthrough load balancers (`networking.gke.io/load-balancer-type: Internal`), as
//! cloud-provider-gcp's gce_loadbalancer_internal.go builds them: per-zone unmanaged instance
//! groups of the nodes (shared by every internal LB of the cluster), a regional backend service
//! (INTERNAL scheme) over them, an HTTP health check (the shared node check on 10256 /healthz, or
//! the Service's own on healthCheckNodePort for ETP=Local) with its firewall, the traffic
//! firewall, and an INTERNAL forwarding rule in a subnetwork. Never a target pool. A Service
//! asking for IPv6 (`spec.ipFamilies`) gets ingress-gce's IPv6 half too ([`ipv6`]); an IPv6-only
//! one has no IPv4 rule, address or traffic firewall.
//!
//! Flow as for external LBs: [`IlbSpec::from_service`] (validate) -> [`desired`] -> `plan_ensure`
//! against [`IlbObserved`](crate::objects::observed::IlbObserved) -> actions ([`plan`]);
//! deletion: [`delete`]. Pure: plain data in and out.
//!
//! svcnet divergences, deliberate: the address is reserved only while the forwarding rule is
//! (re)created (upstream reserves and releases it on every sync, two writes per no-op resync), and
//! the shared-backend-service annotation (`alpha.cloud.google.com/load-balancer-backend-share`)
//! is not supported (the backend service is always named like the LB).
//!
//! Never imports: crate::lb::external, crate::lb::rbs.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Service;

use crate::config::Config;
use crate::error::Result;
use crate::lb::hosts::LbHost;
use crate::lb::ipv6::family_source_ranges;
use crate::lb::spec::{HC_CHECK_INTERVAL_SEC, HC_HEALTHY_THRESHOLD, HC_TIMEOUT_SEC, HC_UNHEALTHY_THRESHOLD};
use crate::lb::spec::{HealthCheckKind, LbSpec, PROTOCOL_UNSPECIFIED};
use crate::naming::{self, IlbNames};
use crate::objects::{
    Backend, BackendService, Firewall, FirewallAllowed, ForwardingRule, HealthCheck, HttpHealthCheckSettings,
    SCHEME_INTERNAL,
};

/// The Service asks for an internal LB (upstream GetLoadBalancerAnnotationType: the GKE key
/// first, then the legacy one).
pub(crate) const LB_TYPE_ANNOTATIONS: [&str; 2] = [
    "networking.gke.io/load-balancer-type",
    "cloud.google.com/load-balancer-type",
];
/// Upstream ServiceAnnotationILBSubnet: subnetwork name of the forwarding rule (and its IP).
pub(crate) const SUBNET_ANNOTATION: &str = "networking.gke.io/internal-load-balancer-subnet";
/// Upstream ServiceAnnotationILBAllowGlobalAccess: "true" lets clients of other regions in.
pub(crate) const GLOBAL_ACCESS_ANNOTATION: &str =
    "networking.gke.io/internal-load-balancer-allow-global-access";
/// Upstream maxL4ILBPorts: beyond this many ports the rule uses allPorts.
pub(crate) const MAX_ILB_PORTS: usize = 5;
/// Type of the health check upstream creates.
pub(crate) const HC_TYPE_HTTP: &str = "HTTP";

pub(crate) fn is_internal(service: &Service) -> bool {
    let annotations = service.metadata.annotations.as_ref();
    LB_TYPE_ANNOTATIONS.iter().any(|key| {
        annotations
            .and_then(|a| a.get(*key))
            .is_some_and(|v| v.eq_ignore_ascii_case("internal"))
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IlbSpec {
    pub base: LbSpec,
    /// Forwarding rule ports as strings, in the Service's order (upstream getPortsAndProtocol).
    pub rule_ports: Vec<String>,
    /// The subnet annotation, when set.
    pub subnet: Option<String>,
    pub global_access: bool,
}

impl IlbSpec {
    pub(crate) fn from_service(service: &Service) -> Result<Self> {
        // TCP and UDP may mix: one L3_DEFAULT rule carries both (as ingress-gce's mixed ILB).
        let base = LbSpec::from_service_mixed(service)?;
        let rule_ports = service
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_ref())
            .map(|ports| ports.iter().map(|p| p.port.to_string()).collect())
            .unwrap_or_default();
        let annotations = service.metadata.annotations.clone().unwrap_or_default();
        let subnet = annotations
            .get(SUBNET_ANNOTATION)
            .filter(|s| !s.is_empty())
            .cloned();
        if let Some(s) = &subnet {
            naming::validate_gce_name(
                s,
                &base.object,
                &format!("metadata.annotations[{SUBNET_ANNOTATION}]"),
            )?;
        }
        let global_access = annotations
            .get(GLOBAL_ACCESS_ANNOTATION)
            .is_some_and(|v| v == "true");
        Ok(IlbSpec {
            base,
            rule_ports,
            subnet,
            global_access,
        })
    }

    pub(crate) fn shared_health_check(&self) -> bool {
        self.base.health_check == HealthCheckKind::Nodes
    }

    pub(crate) fn subnetwork_url(&self, cfg: &Config) -> String {
        cfg.subnetwork_url(self.subnet.as_deref().unwrap_or(&cfg.subnetwork))
    }

    /// What to tell the user when GCE refuses the LB's subnetwork because it does not exist:
    /// the annotation that named it, else the cluster's setting.
    pub(crate) fn missing_subnet_hint(&self, cfg: &Config) -> String {
        match &self.subnet {
            Some(s) => format!(
                "{}: metadata.annotations[{SUBNET_ANNOTATION}]: subnetwork {s:?} does not exist in region {}",
                self.base.object, cfg.region
            ),
            None => format!(
                "{}: the cluster's subnetwork {:?} (--subnetwork, gce.conf subnetwork-name) does not exist in region {}",
                self.base.object, cfg.subnetwork, cfg.region
            ),
        }
    }
}

/// GCE's refusal of a reference to a subnetwork that does not exist (an address's or a
/// forwarding rule's): 400 `invalid`, "... The referenced subnetwork resource cannot be found."
pub(crate) fn is_missing_subnet(status: Option<u16>, message: &str) -> bool {
    status == Some(400) && message.contains("referenced subnetwork resource cannot be found")
}

/// The GCE objects of one internal LB except those that need the IP (firewall, rule's address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DesiredIlb {
    pub names: IlbNames,
    pub spec: IlbSpec,
    /// zone -> member instance URLs (sorted).
    pub instance_groups: BTreeMap<String, Vec<String>>,
    pub health_check: HealthCheck,
    pub health_check_firewall: Firewall,
    pub backend_service: BackendService,
    /// IPAddress empty: filled by the planner.
    pub forwarding_rule: ForwardingRule,
}

pub(crate) fn desired(spec: &IlbSpec, names: &IlbNames, hosts: &[LbHost], cfg: &Config) -> DesiredIlb {
    let instance_groups = crate::lb::hosts::instance_groups(hosts, cfg);
    let (health_check, health_check_firewall) = health_check_and_firewall(spec, names, cfg);
    let hc_name = &health_check.name;
    let backend_service = BackendService {
        name: names.lb.clone(),
        description: naming::service_description(&spec.base.service_name),
        protocol: if spec.base.mixed() {
            PROTOCOL_UNSPECIFIED.to_owned()
        } else {
            spec.base.protocol.clone()
        },
        session_affinity: spec.base.session_affinity.clone(),
        load_balancing_scheme: SCHEME_INTERNAL.to_owned(),
        health_checks: vec![cfg.health_check_url(hc_name)],
        backends: instance_groups
            .keys()
            .map(|zone| Backend {
                group: cfg.instance_group_url(zone, &names.instance_group),
            })
            .collect(),
        ..BackendService::default()
    };
    // GCE takes an L3_DEFAULT rule only with all ports.
    let all_ports = spec.rule_ports.len() > MAX_ILB_PORTS || spec.base.mixed();
    let forwarding_rule = ForwardingRule {
        name: names.lb.clone(),
        description: naming::service_description(&spec.base.service_name),
        ip_address: String::new(),
        ip_protocol: spec.base.protocol.clone(),
        backend_service: cfg.backend_service_url(&names.lb),
        load_balancing_scheme: SCHEME_INTERNAL.to_owned(),
        ports: if all_ports {
            Vec::new()
        } else {
            spec.rule_ports.clone()
        },
        all_ports,
        allow_global_access: spec.global_access,
        network: cfg.network_url(),
        subnetwork: spec.subnetwork_url(cfg),
        ..ForwardingRule::default()
    };
    DesiredIlb {
        names: names.clone(),
        spec: spec.clone(),
        instance_groups,
        health_check,
        health_check_firewall,
        backend_service,
        forwarding_rule,
    }
}

/// The HTTP health check (the shared node check, or the Service's own for ETP Local) and its
/// firewall.
fn health_check_and_firewall(spec: &IlbSpec, names: &IlbNames, cfg: &Config) -> (HealthCheck, Firewall) {
    let shared = spec.shared_health_check();
    let (hc_name, hc_fw_name) = if shared {
        (&names.nodes_health_check, &names.nodes_health_check_firewall)
    } else {
        (&names.local_health_check, &names.local_health_check_firewall)
    };
    let port = spec.base.health_check.port();
    let health_check = HealthCheck {
        name: hc_name.clone(),
        // Upstream newInternalLBHealthCheck: the shared check carries no description.
        description: if shared {
            String::new()
        } else {
            naming::service_description(&spec.base.service_name)
        },
        type_: HC_TYPE_HTTP.to_owned(),
        check_interval_sec: HC_CHECK_INTERVAL_SEC,
        timeout_sec: HC_TIMEOUT_SEC,
        healthy_threshold: HC_HEALTHY_THRESHOLD,
        unhealthy_threshold: HC_UNHEALTHY_THRESHOLD,
        http_health_check: HttpHealthCheckSettings {
            port,
            request_path: spec.base.health_check.path().to_owned(),
        },
    };
    let health_check_firewall = Firewall {
        name: hc_fw_name.clone(),
        description: String::new(),
        network: cfg.network_url(),
        source_ranges: cfg.health_check_source_ranges.clone(),
        destination_ranges: Vec::new(),
        target_tags: cfg.node_tags.clone(),
        allowed: vec![FirewallAllowed {
            ip_protocol: "tcp".into(),
            ports: vec![port.to_string()],
        }],
    };
    (health_check, health_check_firewall)
}

/// The traffic firewall `k8s-fw-<lb>` for the rule's IP (upstream ensureInternalFirewalls).
pub(crate) fn traffic_firewall(d: &DesiredIlb, cfg: &Config, ip: &str) -> Firewall {
    Firewall {
        name: d.names.firewall.clone(),
        description: naming::firewall_description(&d.spec.base.service_name, ip),
        network: cfg.network_url(),
        // A dual-stack Service's ranges are split by family (ingress-gce IPv4ServiceSourceRanges).
        source_ranges: if d.spec.base.ipv6 {
            family_source_ranges(&d.spec.base.source_ranges, false)
        } else {
            d.spec.base.source_ranges.clone()
        },
        destination_ranges: vec![ip.to_owned()],
        target_tags: cfg.node_tags.clone(),
        allowed: if d.spec.base.mixed() {
            d.spec.base.firewall_allowed()
        } else {
            vec![FirewallAllowed {
                ip_protocol: d.spec.base.protocol.to_lowercase(),
                ports: d.spec.base.firewall_port_ranges(),
            }]
        },
    }
}

/// Upstream forwardingRulesEqual (an empty IP on either side matches any).
pub(crate) fn rules_equal(have: &ForwardingRule, want: &ForwardingRule) -> bool {
    let set = |l: &[String]| l.iter().cloned().collect::<BTreeSet<_>>();
    (have.ip_address.is_empty() || want.ip_address.is_empty() || have.ip_address == want.ip_address)
        && have.ip_protocol == want.ip_protocol
        && have.load_balancing_scheme == want.load_balancing_scheme
        && set(&have.ports) == set(&want.ports)
        && have.all_ports == want.all_ports
        && crate::objects::same_link(&have.backend_service, &want.backend_service)
        && have.allow_global_access == want.allow_global_access
        && crate::objects::same_link(&have.subnetwork, &want.subnetwork)
}

pub(crate) fn group_key(zone: &str, name: &str) -> String {
    format!("instanceGroups/{zone}/{name}")
}

pub(crate) mod delete;
pub(crate) mod ipv6;
pub(crate) mod plan;

#[cfg(test)]
mod mixed_tests;
#[cfg(test)]
mod tests;
