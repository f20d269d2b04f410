//! Backend-service-based external network load balancers ("RBS NetLB"), the objects GKE's own
//! controller (kubernetes/ingress-gce, pkg/l4/resources/l4netlb.go) makes for a Service that asks
//! for one ([`crate::lb::ownership::wants_rbs`]): a regional HTTP health check (the cluster's
//! shared `k8s2-…-l4-shared-hc`, or the Service's own for ETP Local) and its firewall, an EXTERNAL
//! regional backend service over the per-zone instance groups the internal LBs already keep
//! ([`crate::lb::hosts::instance_groups`]), an EXTERNAL forwarding rule pointing at it (named
//! `a<uid>` like the target-pool rule, so one name says which kind an LB is), the nodes firewall,
//! and the status annotations ingress-gce writes. Names: [`crate::naming::l4`].
//!
//! Flow as for the other kinds: [`LbSpec`] (validated Service) -> [`desired`] (here) ->
//! [`plan`] against [`RbsObserved`](crate::objects::observed::RbsObserved) -> actions; teardown:
//! [`plan::plan_delete`]. Pure: plain data in and out.
//!
//! Never imports: crate::lb::external, crate::lb::internal.

use std::collections::BTreeMap;

use crate::config::Config;
use crate::lb::hosts::{LbHost, instance_groups};
use crate::lb::spec::{HC_CHECK_INTERVAL_SEC, HC_HEALTHY_THRESHOLD, HC_TIMEOUT_SEC, HC_UNHEALTHY_THRESHOLD};
use crate::lb::spec::{HealthCheckKind, LbSpec, PROTOCOL_UNSPECIFIED};
use crate::naming::l4::{RbsNames, l4_description, l4_shared_description};
use crate::objects;
use crate::objects::{
    Backend, BackendService, ConnectionDraining, Firewall, FirewallAllowed, ForwardingRule, HealthCheck,
    HttpHealthCheckSettings, PassThroughTrafficPolicy, SCHEME_EXTERNAL, ZonalAffinity,
};

/// ingress-gce healthchecksl4.go: the per-service (ETP Local) check probes every 3 s and marks a
/// node down after 2 failures; the shared one keeps the cluster-wide 8 s / 3.
pub(crate) const LOCAL_HC_CHECK_INTERVAL_SEC: i32 = 3;
pub(crate) const LOCAL_HC_UNHEALTHY_THRESHOLD: i32 = 2;
/// ingress-gce backends.go DefaultConnectionDrainingTimeoutSeconds: TCP backend services drain
/// for 30 s, others for 0.
pub(crate) const TCP_DRAINING_TIMEOUT_SEC: i32 = 30;
/// ingress-gce backends.go zonalAffinityDisabledTrafficPolicy: always set on NetLB backends.
pub(crate) const ZONAL_AFFINITY_DISABLED: &str = "ZONAL_AFFINITY_DISABLED";
/// The health check type.
pub(crate) const HC_TYPE_HTTP: &str = "HTTP";
/// ingress-gce backends.go LocalityLBPolicyWeightedMaglev / LocalityLBPolicyMaglev.
pub(crate) const LOCALITY_WEIGHTED_MAGLEV: &str = "WEIGHTED_MAGLEV";
pub(crate) const LOCALITY_MAGLEV: &str = "MAGLEV";
/// The LB type the shared health check's description names (utils.XLB).
const SHARED_HC_LB_TYPE: &str = "XLB";

/// Status annotations ingress-gce writes on an RBS Service (l4/annotations/service.go): GCE object
/// names, one key per object that exists.
pub(crate) const ANN_BACKEND_SERVICE: &str = "service.kubernetes.io/backend-service";
pub(crate) const ANN_HEALTHCHECK: &str = "service.kubernetes.io/healthcheck";
pub(crate) const ANN_FIREWALL_RULE: &str = "service.kubernetes.io/firewall-rule";
pub(crate) const ANN_FIREWALL_RULE_FOR_HC: &str = "service.kubernetes.io/firewall-rule-for-hc";
pub(crate) const ANN_TCP_FORWARDING_RULE: &str = "service.kubernetes.io/tcp-forwarding-rule";
pub(crate) const ANN_UDP_FORWARDING_RULE: &str = "service.kubernetes.io/udp-forwarding-rule";
pub(crate) const ANN_L3_FORWARDING_RULE: &str = "service.kubernetes.io/l3-forwarding-rule";
pub(crate) use crate::lb::ipv6::{
    ANN_FIREWALL_RULE_FOR_HC_IPV6, ANN_FIREWALL_RULE_IPV6, ANN_L3_FORWARDING_RULE_IPV6,
    ANN_TCP_FORWARDING_RULE_IPV6, ANN_UDP_FORWARDING_RULE_IPV6, family_source_ranges,
};
/// Every key of ingress-gce's set (the IPv6, deny and L3 ones too): a sync removes them all and
/// writes those of the objects it holds (l4lbcommon.go mergeAnnotations), a delete removes them.
pub(crate) const STATUS_ANNOTATION_KEYS: [&str; 14] = [
    ANN_BACKEND_SERVICE,
    ANN_HEALTHCHECK,
    ANN_FIREWALL_RULE,
    "service.kubernetes.io/firewall-rule-deny",
    ANN_FIREWALL_RULE_FOR_HC,
    ANN_TCP_FORWARDING_RULE,
    ANN_UDP_FORWARDING_RULE,
    ANN_L3_FORWARDING_RULE,
    ANN_TCP_FORWARDING_RULE_IPV6,
    ANN_UDP_FORWARDING_RULE_IPV6,
    ANN_L3_FORWARDING_RULE_IPV6,
    ANN_FIREWALL_RULE_IPV6,
    "service.kubernetes.io/firewall-rule-deny-ipv6",
    ANN_FIREWALL_RULE_FOR_HC_IPV6,
];

/// The GCE objects of one RBS NetLB; the nodes firewall and the rule's IP wait for the address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DesiredRbs {
    pub names: RbsNames,
    pub spec: LbSpec,
    /// zone -> member instance URLs (sorted), shared with the internal LBs.
    pub instance_groups: BTreeMap<String, Vec<String>>,
    /// Regional, like its URL in the backend service.
    pub health_check: HealthCheck,
    pub health_check_firewall: Firewall,
    pub backend_service: BackendService,
    /// `IPAddress` empty and the description without the IP: see [`forwarding_rule_for`].
    pub forwarding_rule: ForwardingRule,
}

impl DesiredRbs {
    /// Whether the health check is the cluster's shared one (ETP Cluster).
    pub(crate) fn shared_health_check(&self) -> bool {
        self.spec.health_check == HealthCheckKind::Nodes
    }
}

pub(crate) fn desired(spec: &LbSpec, names: &RbsNames, hosts: &[LbHost], cfg: &Config) -> DesiredRbs {
    let instance_groups = instance_groups(hosts, cfg);
    let (health_check, health_check_firewall) = health_check_and_firewall(spec, names, cfg);
    let tcp = spec.protocol == "TCP";
    // A mixed Service's backend service takes every protocol of its L3_DEFAULT rule.
    let protocol = if spec.mixed() {
        PROTOCOL_UNSPECIFIED.to_owned()
    } else {
        spec.protocol.clone()
    };
    let backend_service = BackendService {
        name: names.backend.clone(),
        description: l4_description(&spec.service_name, ""),
        protocol,
        session_affinity: spec.session_affinity.clone(),
        load_balancing_scheme: SCHEME_EXTERNAL.to_owned(),
        health_checks: vec![cfg.region_health_check_url(&health_check.name)],
        // ingress-gce's regional_ig_linker sets the group only; GCE fills the balancing mode.
        backends: instance_groups
            .keys()
            .map(|zone| Backend {
                group: cfg.instance_group_url(zone, &names.instance_group),
            })
            .collect(),
        connection_draining: Some(ConnectionDraining {
            draining_timeout_sec: if tcp { TCP_DRAINING_TIMEOUT_SEC } else { 0 },
        }),
        network_pass_through_lb_traffic_policy: Some(PassThroughTrafficPolicy {
            zonal_affinity: ZonalAffinity {
                spillover: ZONAL_AFFINITY_DISABLED.to_owned(),
            },
        }),
        locality_lb_policy: if spec.weighted_pods_per_node {
            LOCALITY_WEIGHTED_MAGLEV.to_owned()
        } else {
            String::new()
        },
        fingerprint: String::new(),
    };
    let forwarding_rule = ForwardingRule {
        name: names.lb.clone(),
        description: String::new(),
        ip_address: String::new(),
        ip_protocol: spec.protocol.clone(),
        // ingress-gce's L3 rule: all ports, no range (GCE refuses both together).
        port_range: if spec.mixed() {
            String::new()
        } else {
            spec.port_range()
        },
        all_ports: spec.mixed(),
        network_tier: spec.network_tier.clone(),
        backend_service: cfg.backend_service_url(&names.backend),
        load_balancing_scheme: SCHEME_EXTERNAL.to_owned(),
        ..ForwardingRule::default()
    };
    DesiredRbs {
        names: names.clone(),
        spec: spec.clone(),
        instance_groups,
        health_check,
        health_check_firewall,
        backend_service,
        forwarding_rule,
    }
}

/// The regional HTTP health check (ingress-gce newL4HealthCheck) and its firewall (healthchecksl4.go
/// ensureIPv4Firewall: TCP to the check's port from GCE's health checkers).
fn health_check_and_firewall(spec: &LbSpec, names: &RbsNames, cfg: &Config) -> (HealthCheck, Firewall) {
    let shared = spec.health_check == HealthCheckKind::Nodes;
    let port = spec.health_check.port();
    let (name, fw_name, description, fw_description) = if shared {
        (
            &names.shared_health_check,
            &names.shared_health_check_firewall,
            l4_shared_description(SHARED_HC_LB_TYPE),
            l4_shared_description(""),
        )
    } else {
        let own = l4_description(&spec.service_name, "");
        (
            &names.backend,
            &names.local_health_check_firewall,
            own.clone(),
            own,
        )
    };
    let health_check = HealthCheck {
        name: name.clone(),
        description,
        type_: HC_TYPE_HTTP.to_owned(),
        check_interval_sec: if shared {
            HC_CHECK_INTERVAL_SEC
        } else {
            LOCAL_HC_CHECK_INTERVAL_SEC
        },
        timeout_sec: HC_TIMEOUT_SEC,
        healthy_threshold: HC_HEALTHY_THRESHOLD,
        unhealthy_threshold: if shared {
            HC_UNHEALTHY_THRESHOLD
        } else {
            LOCAL_HC_UNHEALTHY_THRESHOLD
        },
        http_health_check: HttpHealthCheckSettings {
            port,
            request_path: spec.health_check.path().to_owned(),
        },
    };
    let firewall = Firewall {
        name: fw_name.clone(),
        description: fw_description,
        network: cfg.network_url(),
        source_ranges: cfg.health_check_source_ranges.clone(),
        destination_ranges: Vec::new(),
        target_tags: cfg.node_tags.clone(),
        allowed: vec![FirewallAllowed {
            ip_protocol: "TCP".into(),
            ports: vec![port.to_string()],
        }],
    };
    (health_check, firewall)
}

/// The forwarding rule on `ip`; its description names the IP (ingress-gce ensureIPv4ForwardingRule).
pub(crate) fn forwarding_rule_for(d: &DesiredRbs, ip: &str) -> ForwardingRule {
    ForwardingRule {
        ip_address: ip.to_owned(),
        description: l4_description(&d.spec.service_name, ip),
        ..d.forwarding_rule.clone()
    }
}

/// ingress-gce's forwarding rule equality for NetLB rules (an empty wanted IP matches any).
pub(crate) fn rules_equal(have: &ForwardingRule, want: &ForwardingRule) -> bool {
    (want.ip_address.is_empty() || have.ip_address == want.ip_address)
        && have.ip_protocol == want.ip_protocol
        && have.load_balancing_scheme == want.load_balancing_scheme
        && have.port_range == want.port_range
        && have.all_ports == want.all_ports
        && have.network_tier == want.network_tier
        && have.target.is_empty()
        && objects::same_link(&have.backend_service, &want.backend_service)
}

/// The nodes firewall (ingress-gce ensureIPv4NodesFirewall, pinhole on): the Service's ports by
/// protocol, to the LB IP only, from the IPv4 entries of loadBalancerSourceRanges (else anywhere,
/// [`family_source_ranges`]); its description
/// carries spec.loadBalancerIP, not the IP in use.
pub(crate) fn nodes_firewall(d: &DesiredRbs, cfg: &Config, ip: &str) -> Firewall {
    let requested = d.spec.requested_ip.as_deref().unwrap_or("");
    Firewall {
        name: d.names.backend.clone(),
        description: l4_description(&d.spec.service_name, requested),
        network: cfg.network_url(),
        source_ranges: family_source_ranges(&d.spec.source_ranges, false),
        destination_ranges: vec![ip.to_owned()],
        target_tags: cfg.node_tags.clone(),
        allowed: if d.spec.mixed() {
            d.spec.firewall_allowed()
        } else {
            vec![FirewallAllowed {
                ip_protocol: d.spec.protocol.clone(),
                ports: d.spec.firewall_port_ranges(),
            }]
        },
    }
}

pub(crate) mod ipv6;
pub(crate) mod plan;

pub(crate) mod status;

#[cfg(test)]
mod mixed_tests;
#[cfg(test)]
mod tests;
