//! Internal passthrough load balancers (`networking.gke.io/load-balancer-type: Internal`), as
//! cloud-provider-gcp's gce_loadbalancer_internal.go builds them: per-zone unmanaged instance
//! groups of the nodes (shared by every internal LB of the cluster), a regional backend service
//! (INTERNAL scheme) over them, an HTTP health check (the shared node check on 10256 /healthz, or
//! the Service's own on healthCheckNodePort for ETP=Local) with its firewall, the traffic
//! firewall, and an INTERNAL forwarding rule in a subnetwork. Never a target pool.
//!
//! Flow as for external LBs: [`IlbSpec::from_service`] (validate) -> [`desired`] -> [`plan_ensure`]
//! against [`IlbObserved`](crate::objects::observed::IlbObserved) -> actions; deletion: [`plan_delete`]. Pure: plain data in and out.
//!
//! svcnet divergences, deliberate: the address is reserved only while the forwarding rule is
//! (re)created (upstream reserves and releases it on every sync, two writes per no-op resync), and
//! the shared-backend-service annotation (`alpha.cloud.google.com/load-balancer-backend-share`)
//! is not supported (the backend service is always named like the LB).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Service;

use crate::config::Config;
use crate::error::Result;
use crate::lb::desired::{
    HC_CHECK_INTERVAL_SEC, HC_HEALTHY_THRESHOLD, HC_TIMEOUT_SEC, HC_UNHEALTHY_THRESHOLD,
};
use crate::lb::drift;
use crate::lb::hosts::LbHost;
use crate::lb::spec::{HealthCheckKind, LbSpec};
use crate::naming::{self, IlbNames};
use crate::objects::action::Action;
use crate::objects::observed::IlbObserved;
use crate::objects::{
    self, Address, Backend, BackendService, Firewall, FirewallAllowed, ForwardingRule, HealthCheck,
    HttpHealthCheckSettings,
};

/// The Service asks for an internal LB (upstream GetLoadBalancerAnnotationType: the GKE key
/// first, then the legacy one).
pub const LB_TYPE_ANNOTATIONS: [&str; 2] = [
    "networking.gke.io/load-balancer-type",
    "cloud.google.com/load-balancer-type",
];
/// Upstream ServiceAnnotationILBSubnet: subnetwork name of the forwarding rule (and its IP).
pub const SUBNET_ANNOTATION: &str = "networking.gke.io/internal-load-balancer-subnet";
/// Upstream ServiceAnnotationILBAllowGlobalAccess: "true" lets clients of other regions in.
pub const GLOBAL_ACCESS_ANNOTATION: &str = "networking.gke.io/internal-load-balancer-allow-global-access";
pub const SCHEME_INTERNAL: &str = "INTERNAL";
/// Upstream maxL4ILBPorts: beyond this many ports the rule uses allPorts.
pub const MAX_ILB_PORTS: usize = 5;
/// Upstream maxInstancesPerInstanceGroup: groups keep the first 1000 nodes by name.
pub const MAX_INSTANCES_PER_GROUP: usize = 1000;
/// Type of the health check upstream creates.
pub const HC_TYPE_HTTP: &str = "HTTP";

pub fn is_internal(service: &Service) -> bool {
    let annotations = service.metadata.annotations.as_ref();
    LB_TYPE_ANNOTATIONS.iter().any(|key| {
        annotations
            .and_then(|a| a.get(*key))
            .is_some_and(|v| v.eq_ignore_ascii_case("internal"))
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IlbSpec {
    pub base: LbSpec,
    /// Forwarding rule ports as strings, in the Service's order (upstream getPortsAndProtocol).
    pub rule_ports: Vec<String>,
    /// The subnet annotation, when set.
    pub subnet: Option<String>,
    pub global_access: bool,
}

impl IlbSpec {
    pub fn from_service(service: &Service) -> Result<Self> {
        let base = LbSpec::from_service(service)?;
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

    pub fn shared_health_check(&self) -> bool {
        self.base.health_check == HealthCheckKind::Nodes
    }

    pub fn subnetwork_url(&self, cfg: &Config) -> String {
        cfg.subnetwork_url(self.subnet.as_deref().unwrap_or(&cfg.subnetwork))
    }
}

/// The GCE objects of one internal LB except those that need the IP (firewall, rule's address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredIlb {
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

pub fn desired(spec: &IlbSpec, names: &IlbNames, hosts: &[LbHost], cfg: &Config) -> DesiredIlb {
    let mut by_zone: BTreeMap<String, Vec<&LbHost>> = BTreeMap::new();
    for h in hosts {
        by_zone.entry(h.zone.clone()).or_default().push(h);
    }
    let instance_groups: BTreeMap<String, Vec<String>> = by_zone
        .into_iter()
        .map(|(zone, mut hs)| {
            hs.sort_by(|a, b| a.instance.cmp(&b.instance));
            hs.dedup();
            hs.truncate(MAX_INSTANCES_PER_GROUP);
            let urls = hs
                .iter()
                .map(|h| cfg.instance_url(&h.zone, &h.instance))
                .collect();
            (zone, urls)
        })
        .collect();

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
    let backend_service = BackendService {
        name: names.lb.clone(),
        description: naming::service_description(&spec.base.service_name),
        protocol: spec.base.protocol.clone(),
        session_affinity: spec.base.session_affinity.clone(),
        load_balancing_scheme: SCHEME_INTERNAL.to_owned(),
        health_checks: vec![cfg.health_check_url(hc_name)],
        backends: instance_groups
            .keys()
            .map(|zone| Backend {
                group: cfg.instance_group_url(zone, &names.instance_group),
            })
            .collect(),
        fingerprint: String::new(),
    };
    let all_ports = spec.rule_ports.len() > MAX_ILB_PORTS;
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

/// The traffic firewall `k8s-fw-<lb>` for the rule's IP (upstream ensureInternalFirewalls).
pub fn traffic_firewall(d: &DesiredIlb, cfg: &Config, ip: &str) -> Firewall {
    Firewall {
        name: d.names.firewall.clone(),
        description: naming::firewall_description(&d.spec.base.service_name, ip),
        network: cfg.network_url(),
        source_ranges: d.spec.base.source_ranges.clone(),
        destination_ranges: vec![ip.to_owned()],
        target_tags: cfg.node_tags.clone(),
        allowed: vec![FirewallAllowed {
            ip_protocol: d.spec.base.protocol.to_lowercase(),
            ports: d.spec.base.firewall_port_ranges(),
        }],
    }
}

/// Upstream forwardingRulesEqual (an empty IP on either side matches any).
pub fn rules_equal(have: &ForwardingRule, want: &ForwardingRule) -> bool {
    let set = |l: &[String]| l.iter().cloned().collect::<BTreeSet<_>>();
    (have.ip_address.is_empty() || want.ip_address.is_empty() || have.ip_address == want.ip_address)
        && have.ip_protocol == want.ip_protocol
        && have.load_balancing_scheme == want.load_balancing_scheme
        && set(&have.ports) == set(&want.ports)
        && have.all_ports == want.all_ports
        && objects::same_link(&have.backend_service, &want.backend_service)
        && have.allow_global_access == want.allow_global_access
        && objects::same_link(&have.subnetwork, &want.subnetwork)
}

/// Upstream backendSvcEqual (backends compared by group link only).
pub fn backend_services_equal(have: &BackendService, want: &BackendService) -> bool {
    let groups = |b: &[Backend]| {
        b.iter()
            .map(|b| objects::link_key(&b.group).to_owned())
            .collect::<BTreeSet<_>>()
    };
    have.protocol == want.protocol
        && have.description == want.description
        && have.session_affinity == want.session_affinity
        && have.load_balancing_scheme == want.load_balancing_scheme
        && drift::links_equal(&have.health_checks, &want.health_checks)
        && groups(&have.backends) == groups(&want.backends)
}

/// Upstream needToUpdateHealthChecks.
pub fn health_check_differs(want: &HealthCheck, have: &HealthCheck) -> bool {
    have.http_health_check.port != want.http_health_check.port
        || have.http_health_check.request_path != want.http_health_check.request_path
        || have.type_ != want.type_
        || have.description != want.description
        || have.check_interval_sec < want.check_interval_sec
        || have.timeout_sec < want.timeout_sec
        || have.unhealthy_threshold < want.unhealthy_threshold
        || have.healthy_threshold < want.healthy_threshold
}

/// Upstream mergeHealthChecks: larger timing values an operator set are kept.
pub fn merged_health_check(want: &HealthCheck, have: &HealthCheck) -> HealthCheck {
    HealthCheck {
        check_interval_sec: want.check_interval_sec.max(have.check_interval_sec),
        timeout_sec: want.timeout_sec.max(have.timeout_sec),
        unhealthy_threshold: want.unhealthy_threshold.max(have.unhealthy_threshold),
        healthy_threshold: want.healthy_threshold.max(have.healthy_threshold),
        ..want.clone()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IlbPlan {
    pub actions: Vec<Action>,
    /// The plan ends with reserving an address whose IP GCE picks: execute, observe, plan again.
    pub replan: bool,
    pub ingress_ip: Option<String>,
}

fn group_key(zone: &str, name: &str) -> String {
    format!("instanceGroups/{zone}/{name}")
}

/// Desired vs observed -> ordered calls (upstream ensureInternalLoadBalancer's order: instance
/// groups, health check, address, [rule delete], backend service, rule, firewalls, old health
/// check, address release). Empty when GCE matches.
pub fn plan_ensure(d: &DesiredIlb, o: &IlbObserved, cfg: &Config) -> IlbPlan {
    let names = &d.names;
    let mut actions = Vec::new();

    // 1. Instance groups and their members (one add and one remove call per zone).
    for (zone, want) in &d.instance_groups {
        let have = match o.instance_groups.get(zone) {
            Some(have) => have.clone(),
            None => {
                actions.push(Action::CreateInstanceGroup {
                    zone: zone.clone(),
                    name: names.instance_group.clone(),
                });
                Vec::new()
            }
        };
        let have_keys: BTreeSet<&str> = have.iter().map(|l| objects::instance_key(l)).collect();
        let want_keys: BTreeSet<&str> = want.iter().map(|l| objects::instance_key(l)).collect();
        let remove: Vec<String> = have
            .iter()
            .filter(|l| !want_keys.contains(objects::instance_key(l)))
            .cloned()
            .collect();
        let add: Vec<String> = want
            .iter()
            .filter(|l| !have_keys.contains(objects::instance_key(l)))
            .cloned()
            .collect();
        if !remove.is_empty() {
            actions.push(Action::RemoveGroupInstances {
                zone: zone.clone(),
                group: names.instance_group.clone(),
                instances: remove,
            });
        }
        if !add.is_empty() {
            actions.push(Action::AddGroupInstances {
                zone: zone.clone(),
                group: names.instance_group.clone(),
                instances: add,
            });
        }
    }

    // 2. Health check.
    let shared = d.spec.shared_health_check();
    let have_hc = if shared {
        &o.nodes_health_check
    } else {
        &o.local_health_check
    };
    match have_hc {
        None => actions.push(Action::CreateHealthCheckV1(d.health_check.clone())),
        Some(have) if health_check_differs(&d.health_check, have) => actions.push(
            Action::UpdateHealthCheckV1(merged_health_check(&d.health_check, have)),
        ),
        Some(_) => {}
    }

    // 3. The IP (upstream ilbIPToUse) and whether the rule is (re)created.
    let want_subnet = &d.forwarding_rule.subnetwork;
    let fr = o.forwarding_rule.as_ref();
    let ip_to_use = d.spec.base.requested_ip.clone().or_else(|| {
        fr.filter(|f| objects::same_link(&f.subnetwork, want_subnet))
            .map(|f| f.ip_address.clone())
            .filter(|ip| !ip.is_empty())
    });
    let mut want_fr = d.forwarding_rule.clone();
    want_fr.ip_address = ip_to_use.clone().unwrap_or_default();
    let fr_equal = fr.is_some_and(|have| rules_equal(have, &want_fr));
    let mut release = None;
    let ip = if fr_equal {
        // The rule stays: a reservation of ours is a leftover of an interrupted creation.
        if o.address.is_some() {
            release = Some(Action::DeleteAddress {
                name: names.lb.clone(),
            });
        }
        fr.map(|f| f.ip_address.clone()).unwrap_or_default()
    } else {
        // Upstream addressManager.HoldAddress: our address if it fits, else a new reservation;
        // a user's address holding the requested IP is used as it is.
        let fits = o.address.as_ref().is_some_and(|a| {
            a.address_type == SCHEME_INTERNAL
                && a.address.is_some()
                && ip_to_use.as_ref().is_none_or(|ip| a.address.as_ref() == Some(ip))
        });
        let user_holds = ip_to_use.as_ref().is_some_and(|ip| {
            o.ip_holder
                .as_ref()
                .is_some_and(|a| a.name != names.lb && a.address.as_ref() == Some(ip))
        });
        if fits {
            release = Some(Action::DeleteAddress {
                name: names.lb.clone(),
            });
            o.address
                .as_ref()
                .and_then(|a| a.address.clone())
                .unwrap_or_default()
        } else if user_holds {
            if o.address.is_some() {
                release = Some(Action::DeleteAddress {
                    name: names.lb.clone(),
                });
            }
            ip_to_use.clone().unwrap_or_default()
        } else {
            if o.address.is_some() {
                actions.push(Action::DeleteAddress {
                    name: names.lb.clone(),
                });
            }
            actions.push(Action::CreateAddress(Address {
                name: names.lb.clone(),
                description: naming::service_description(&d.spec.base.service_name),
                address: ip_to_use.clone(),
                network_tier: String::new(),
                address_type: SCHEME_INTERNAL.to_owned(),
                subnetwork: want_subnet.clone(),
            }));
            match &ip_to_use {
                Some(ip) => {
                    release = Some(Action::DeleteAddress {
                        name: names.lb.clone(),
                    });
                    ip.clone()
                }
                None => {
                    return IlbPlan {
                        actions,
                        replan: true,
                        ingress_ip: None,
                    };
                }
            }
        }
    };
    want_fr.ip_address = ip.clone();

    // 4. A rule that differs goes first: the backend service may change under it.
    if fr.is_some() && !fr_equal {
        actions.push(Action::DeleteForwardingRule {
            name: names.lb.clone(),
        });
    }

    // 5. Backend service.
    let old_hc = o
        .backend_service
        .as_ref()
        .and_then(|bs| bs.health_checks.first())
        .map(|l| objects::link_name(l).to_owned());
    match &o.backend_service {
        None => actions.push(Action::CreateBackendService(d.backend_service.clone())),
        Some(have) if !backend_services_equal(have, &d.backend_service) => {
            actions.push(Action::UpdateBackendService(BackendService {
                fingerprint: have.fingerprint.clone(),
                ..d.backend_service.clone()
            }))
        }
        Some(_) => {}
    }

    // 6. Forwarding rule.
    if !fr_equal {
        actions.push(Action::CreateForwardingRule(want_fr));
    }

    // 7. Firewalls: traffic (for the rule's IP), the legacy-named one once the new one exists,
    // the health check's.
    let want_fw = traffic_firewall(d, cfg, &ip);
    match &o.firewall {
        None => actions.push(Action::CreateFirewall(want_fw)),
        Some(have) if drift::firewall_differs(&want_fw, have, None) => {
            actions.push(Action::PatchFirewall(want_fw))
        }
        Some(_) => {}
    }
    if o.legacy_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.legacy_firewall.clone(),
        });
    }
    let have_hc_fw = if shared {
        &o.nodes_health_check_firewall
    } else {
        &o.local_health_check_firewall
    };
    match have_hc_fw {
        None => actions.push(Action::CreateFirewall(d.health_check_firewall.clone())),
        Some(have) if drift::firewall_differs(&d.health_check_firewall, have, None) => {
            actions.push(Action::PatchFirewall(d.health_check_firewall.clone()))
        }
        Some(_) => {}
    }

    // 8. The health check of the other kind (upstream clearPreviousInternalResources): the
    // service's own once back on the shared one (also a leftover of an interrupted switch), the
    // shared one only when our backend service used it (others may still: kept then).
    if shared {
        if o.local_health_check.is_some() {
            actions.push(Action::DeleteHealthCheckV1 {
                name: names.local_health_check.clone(),
                keep_if_in_use: true,
            });
        }
        if o.local_health_check_firewall.is_some() {
            actions.push(Action::DeleteFirewall {
                name: names.local_health_check_firewall.clone(),
            });
        }
    } else if old_hc.as_deref() == Some(names.nodes_health_check.as_str())
        && !o
            .kept_in_use
            .contains(&format!("healthChecks/{}", names.nodes_health_check))
    {
        if o.nodes_health_check.is_some() {
            actions.push(Action::DeleteHealthCheckV1 {
                name: names.nodes_health_check.clone(),
                keep_if_in_use: true,
            });
        }
        if o.nodes_health_check_firewall.is_some() {
            actions.push(Action::DeleteFirewall {
                name: names.nodes_health_check_firewall.clone(),
            });
        }
    }

    actions.extend(release);
    IlbPlan {
        actions,
        replan: false,
        ingress_ip: Some(ip),
    }
}

/// Which objects a teardown may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Teardown {
    /// The Service is gone (or no LoadBalancer any more): everything named like it.
    All,
    /// The Service turned external: leave a forwarding rule or address of the external kind
    /// (the external LB, or a crash's leftover of it, shares their names).
    InternalOnly,
}

/// Upstream ensureInternalLoadBalancerDeleted: address, rule, backend service, traffic firewalls,
/// health checks and their firewalls, then the shared instance groups (kept while other internal
/// LBs use them). Only what exists is deleted; a repeated delete plans nothing.
pub fn plan_delete(names: &IlbNames, o: &IlbObserved, mode: Teardown) -> Vec<Action> {
    let mut actions = Vec::new();
    let internal_only = mode == Teardown::InternalOnly;
    if let Some(a) = &o.address
        && (!internal_only || a.address_type == SCHEME_INTERNAL)
    {
        actions.push(Action::DeleteAddress {
            name: names.lb.clone(),
        });
    }
    if let Some(fr) = &o.forwarding_rule
        && (!internal_only || fr.load_balancing_scheme == SCHEME_INTERNAL)
    {
        actions.push(Action::DeleteForwardingRule {
            name: names.lb.clone(),
        });
    }
    if o.backend_service.is_some() {
        actions.push(Action::DeleteBackendService {
            name: names.lb.clone(),
        });
    }
    if o.firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.firewall.clone(),
        });
    }
    if o.legacy_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.legacy_firewall.clone(),
        });
    }
    for (hc, hc_present, fw, fw_present) in [
        (
            &names.local_health_check,
            o.local_health_check.is_some(),
            &names.local_health_check_firewall,
            o.local_health_check_firewall.is_some(),
        ),
        (
            &names.nodes_health_check,
            o.nodes_health_check.is_some(),
            &names.nodes_health_check_firewall,
            o.nodes_health_check_firewall.is_some(),
        ),
    ] {
        if o.kept_in_use.contains(&format!("healthChecks/{hc}")) {
            continue;
        }
        if hc_present {
            actions.push(Action::DeleteHealthCheckV1 {
                name: hc.clone(),
                keep_if_in_use: true,
            });
        }
        if fw_present {
            actions.push(Action::DeleteFirewall { name: fw.clone() });
        }
    }
    for zone in o.instance_groups.keys() {
        if !o.kept_in_use.contains(&group_key(zone, &names.instance_group)) {
            actions.push(Action::DeleteInstanceGroup {
                zone: zone.clone(),
                name: names.instance_group.clone(),
            });
        }
    }
    actions
}

#[cfg(test)]
mod tests;
