//! The GCE objects one external (target pool) load balancer should consist of, built from the
//! validated [`LbSpec`], the pool members and the resolved IP. Field values follow
//! cloud-provider-gcp's gce_loadbalancer_external.go.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::lb::hosts::LbHost;
use crate::lb::spec::{
    HC_CHECK_INTERVAL_SEC, HC_HEALTHY_THRESHOLD, HC_TIMEOUT_SEC, HC_UNHEALTHY_THRESHOLD, HealthCheckKind,
    LbSpec,
};
use crate::naming::{self, LbNames};
use crate::objects::{Address, Firewall, FirewallAllowed, ForwardingRule, HttpHealthCheck, TargetPool};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DesiredLb {
    pub names: LbNames,
    pub spec: LbSpec,
    pub ip: String,
    /// The controller's own reservation; None when the IP is a user's reserved address.
    pub address: Option<Address>,
    pub firewall: Firewall,
    /// Ports as older upstream versions wrote them (one per port): accepted as equal, no patch.
    pub firewall_ports_legacy: Vec<String>,
    pub health_check: HttpHealthCheck,
    pub health_check_firewall: Firewall,
    pub target_pool: TargetPool,
    pub forwarding_rule: ForwardingRule,
}

impl DesiredLb {
    pub(crate) fn health_check_kind(&self) -> &HealthCheckKind {
        &self.spec.health_check
    }
}

/// Upstream makeHTTPHealthCheck; note the description carries the *health check's* name.
pub(crate) fn http_health_check(name: &str, kind: &HealthCheckKind) -> HttpHealthCheck {
    HttpHealthCheck {
        name: name.to_owned(),
        description: naming::service_description(name),
        port: kind.port(),
        request_path: kind.path().to_owned(),
        check_interval_sec: HC_CHECK_INTERVAL_SEC,
        timeout_sec: HC_TIMEOUT_SEC,
        healthy_threshold: HC_HEALTHY_THRESHOLD,
        unhealthy_threshold: HC_UNHEALTHY_THRESHOLD,
    }
}

pub(crate) fn desired_lb(
    spec: &LbSpec,
    names: &LbNames,
    hosts: &[LbHost],
    cfg: &Config,
    ip: &str,
    controller_owned_ip: bool,
) -> Result<DesiredLb> {
    if hosts.is_empty() {
        return Err(Error::NoEligibleNodes {
            object: spec.object.clone(),
        });
    }
    let address = controller_owned_ip.then(|| Address {
        name: names.lb.clone(),
        description: naming::service_description(&spec.service_name),
        address: Some(ip.to_owned()),
        network_tier: spec.network_tier.clone(),
        ..Address::default()
    });

    let firewall = Firewall {
        name: names.firewall.clone(),
        description: naming::firewall_description(&spec.service_name, ip),
        network: cfg.network_url(),
        source_ranges: spec.source_ranges.clone(),
        destination_ranges: vec![ip.to_owned()],
        target_tags: cfg.node_tags.clone(),
        allowed: vec![FirewallAllowed {
            ip_protocol: spec.protocol.to_lowercase(),
            ports: spec.firewall_port_ranges(),
        }],
    };

    let (health_check, health_check_firewall) = health_check_and_firewall(spec, names, cfg, ip);
    let target_pool = target_pool(spec, names, hosts, cfg, &health_check.name);

    let forwarding_rule = ForwardingRule {
        name: names.lb.clone(),
        description: naming::service_description(&spec.service_name),
        ip_address: ip.to_owned(),
        ip_protocol: spec.protocol.clone(),
        port_range: spec.port_range(),
        target: cfg.target_pool_url(&names.lb),
        network_tier: spec.network_tier.clone(),
        ..ForwardingRule::default()
    };

    Ok(DesiredLb {
        names: names.clone(),
        spec: spec.clone(),
        ip: ip.to_owned(),
        address,
        firewall,
        firewall_ports_legacy: spec.firewall_port_list(),
        health_check,
        health_check_firewall,
        target_pool,
        forwarding_rule,
    })
}

/// The LB's health check (the shared node check, or the Service's own for ETP Local) and the
/// firewall letting the checkers reach it.
fn health_check_and_firewall(
    spec: &LbSpec,
    names: &LbNames,
    cfg: &Config,
    ip: &str,
) -> (HttpHealthCheck, Firewall) {
    let (hc_name, hc_fw_name, hc_fw_description, hc_fw_destination) = match spec.health_check {
        // Divergence: upstream puts the first LB's IP into the shared firewall's destinationRanges
        // and never compares it, so other LBs' health checks rely on luck. svcnet leaves it empty
        // (all destinations): legacy health checks probe the forwarding rule IP of each LB.
        HealthCheckKind::Nodes => (
            &names.nodes_health_check,
            &names.nodes_health_check_firewall,
            naming::cluster_description(&cfg.cluster_id),
            Vec::new(),
        ),
        HealthCheckKind::Local { .. } => (
            &names.local_health_check,
            &names.local_health_check_firewall,
            naming::firewall_description(&spec.service_name, ip),
            vec![ip.to_owned()],
        ),
    };
    let health_check = http_health_check(hc_name, &spec.health_check);
    let health_check_firewall = Firewall {
        name: hc_fw_name.clone(),
        description: hc_fw_description,
        network: cfg.network_url(),
        source_ranges: cfg.health_check_source_ranges.clone(),
        destination_ranges: hc_fw_destination,
        target_tags: cfg.node_tags.clone(),
        allowed: vec![FirewallAllowed {
            ip_protocol: "tcp".into(),
            ports: vec![health_check.port.to_string()],
        }],
    };

    (health_check, health_check_firewall)
}

/// The target pool of every eligible node's instance, checked by `hc_name`.
fn target_pool(spec: &LbSpec, names: &LbNames, hosts: &[LbHost], cfg: &Config, hc_name: &str) -> TargetPool {
    let mut instances: Vec<String> = hosts
        .iter()
        .map(|h| cfg.instance_url(&h.zone, &h.instance))
        .collect();
    instances.sort();
    instances.dedup();
    TargetPool {
        name: names.lb.clone(),
        description: naming::service_description(&spec.service_name),
        instances,
        session_affinity: spec.session_affinity.clone(),
        health_checks: vec![cfg.http_health_check_url(hc_name)],
    }
}
