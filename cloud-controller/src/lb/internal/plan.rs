//! Internal LB plan: desired vs observed -> actions in upstream's order (groups, check, address,
//! [rule delete], backend service, rule, firewalls, IPv6 half, old check, release) with
//! upstream's equality rules.

use std::collections::BTreeSet;

use crate::config::Config;
use crate::lb::backend_service::{BackendServicePlan, plan_backend_service};
use crate::lb::drift;
use crate::lb::hosts::plan_group_members;
use crate::lb::internal::{DesiredIlb, ipv6, traffic_firewall};
use crate::lb::ipv6::ensure_firewall;
use crate::naming;
use crate::objects::action::Action;
use crate::objects::observed::IlbObserved;
use crate::objects::{self, Address, Backend, BackendService, ForwardingRule, SCHEME_INTERNAL};

pub(crate) use crate::lb::internal::rules_equal;

/// Upstream backendSvcEqual (backends compared by group link only).
pub(crate) fn backend_services_equal(have: &BackendService, want: &BackendService) -> bool {
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

/// The health check comparisons both backend-service kinds use live in `lb::drift`.
pub(crate) use crate::lb::drift::{
    health_check_v1_differs as health_check_differs, merged_health_check_v1 as merged_health_check,
};

/// Desired vs observed -> ordered calls (upstream ensureInternalLoadBalancer's order: instance
/// groups, health check, address, [rule delete], backend service, rule, firewalls, old health
/// check, address release; then ingress-gce's IPv6 half). Empty when GCE matches.
pub(crate) fn plan_ensure(d: &DesiredIlb, o: &IlbObserved, cfg: &Config) -> BackendServicePlan {
    let names = &d.names;
    let mut actions = Vec::new();
    plan_groups(d, o, &mut actions);
    let shared = d.spec.shared_health_check();
    plan_health_check(d, o, shared, &mut actions);
    let v4 = if d.spec.base.ipv4 {
        let Some(p) = plan_ip(d, o, &mut actions) else {
            return replan(actions);
        };
        // A rule that differs goes first: the backend service may change under it.
        if o.forwarding_rule.is_some() && !p.fr_equal {
            actions.push(Action::DeleteForwardingRule {
                name: names.lb.clone(),
            });
        }
        Some(p)
    } else {
        plan_unwanted_ipv4(d, o, &mut actions);
        None
    };
    // The IPv6 rule too: gone when not wanted, deleted first when its protocol changes.
    let have_v6 = o.ipv6_forwarding_rule.as_ref();
    let keep_v6 = have_v6.filter(|r| d.spec.base.ipv6 && r.ip_protocol == d.forwarding_rule.ip_protocol);
    if !d.spec.base.ipv6 {
        ipv6::plan_unwanted_ipv6(&names.ipv6, o, &mut actions);
    } else if have_v6.is_some() && keep_v6.is_none() {
        actions.push(Action::DeleteForwardingRule {
            name: names.ipv6.rule.clone(),
        });
    }
    let old_hc = plan_backend_service(
        &d.backend_service,
        o.backend_service.as_ref(),
        backend_services_equal,
        &mut actions,
    );
    let mut release = None;
    let ingress_ip = v4.map(|p| {
        if !p.fr_equal {
            actions.push(Action::CreateForwardingRule(p.want_fr));
        }
        plan_traffic_firewalls(d, o, cfg, &p.ip, &mut actions);
        release = p.release;
        p.ip
    });
    plan_health_check_firewall(d, o, shared, &mut actions);
    let ingress_ipv6 = if d.spec.base.ipv6 {
        let Some(ip) = ipv6::plan_ipv6(d, o, keep_v6, cfg, &mut actions) else {
            return replan(actions);
        };
        Some(ip)
    } else {
        None
    };
    plan_old_check(d, o, shared, old_hc.as_deref(), &mut actions);
    actions.extend(release);
    BackendServicePlan {
        actions,
        replan: false,
        ingress_ip,
        ingress_ipv6,
    }
}

fn replan(actions: Vec<Action>) -> BackendServicePlan {
    BackendServicePlan {
        actions,
        replan: true,
        ingress_ip: None,
        ingress_ipv6: None,
    }
}

/// An IPv6-only Service has no IPv4 rule, reservation or traffic firewall (ingress-gce l4.go
/// deleteIPv4ResourcesOnSync).
fn plan_unwanted_ipv4(d: &DesiredIlb, o: &IlbObserved, actions: &mut Vec<Action>) {
    let names = &d.names;
    if o.forwarding_rule.is_some() {
        actions.push(Action::DeleteForwardingRule {
            name: names.lb.clone(),
        });
    }
    if o.address.is_some() {
        actions.push(release_ours(d));
    }
    for (have, name) in [
        (&o.firewall, &names.firewall),
        (&o.legacy_firewall, &names.legacy_firewall),
    ] {
        if have.is_some() {
            actions.push(Action::DeleteFirewall { name: name.clone() });
        }
    }
}

/// Instance groups and their members (one add and one remove call per zone).
fn plan_groups(d: &DesiredIlb, o: &IlbObserved, actions: &mut Vec<Action>) {
    plan_group_members(
        &d.instance_groups,
        &o.instance_groups,
        &d.names.instance_group,
        actions,
    );
}

/// The health check of the wanted kind (shared or the Service's own).
fn plan_health_check(d: &DesiredIlb, o: &IlbObserved, shared: bool, actions: &mut Vec<Action>) {
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
}

/// The rule's IP, and whether the rule stays.
struct IpPlan {
    ip: String,
    /// The existing rule matches: it stays.
    fr_equal: bool,
    /// Our reservation, released as the plan's last step.
    release: Option<Action>,
    want_fr: ForwardingRule,
}

/// The IP (upstream ilbIPToUse) and whether the rule is (re)created; None when an address whose
/// IP GCE picks is being reserved (the plan ends there and is made again).
fn plan_ip(d: &DesiredIlb, o: &IlbObserved, actions: &mut Vec<Action>) -> Option<IpPlan> {
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
    let (ip, release) = if fr_equal {
        // The rule stays: a reservation of ours is a leftover of an interrupted creation.
        let ip = fr.map(|f| f.ip_address.clone()).unwrap_or_default();
        (ip, o.address.is_some().then(|| release_ours(d)))
    } else {
        hold_address(d, o, ip_to_use.as_ref(), actions)?
    };
    want_fr.ip_address = ip.clone();
    Some(IpPlan {
        ip,
        fr_equal,
        release,
        want_fr,
    })
}

fn release_ours(d: &DesiredIlb) -> Action {
    Action::DeleteAddress {
        name: d.names.lb.clone(),
    }
}

/// Upstream addressManager.HoldAddress: our address if it fits, else a new reservation; a user's
/// address holding the requested IP is used as it is. Returns the IP and the release of our
/// reservation, or None while GCE picks the IP of a new one.
fn hold_address(
    d: &DesiredIlb,
    o: &IlbObserved,
    ip_to_use: Option<&String>,
    actions: &mut Vec<Action>,
) -> Option<(String, Option<Action>)> {
    let names = &d.names;
    let fits = o.address.as_ref().is_some_and(|a| {
        a.address_type == SCHEME_INTERNAL
            && a.address.is_some()
            && ip_to_use.is_none_or(|ip| a.address.as_ref() == Some(ip))
    });
    let user_holds = ip_to_use.is_some_and(|ip| {
        o.ip_holder
            .as_ref()
            .is_some_and(|a| a.name != names.lb && a.address.as_ref() == Some(ip))
    });
    if fits {
        let ip = o
            .address
            .as_ref()
            .and_then(|a| a.address.clone())
            .unwrap_or_default();
        return Some((ip, Some(release_ours(d))));
    }
    if user_holds {
        let ip = ip_to_use.cloned().unwrap_or_default();
        return Some((ip, o.address.is_some().then(|| release_ours(d))));
    }
    if o.address.is_some() {
        actions.push(release_ours(d));
    }
    actions.push(Action::CreateAddress(Address {
        name: names.lb.clone(),
        description: naming::service_description(&d.spec.base.service_name),
        address: ip_to_use.cloned(),
        network_tier: String::new(),
        address_type: SCHEME_INTERNAL.to_owned(),
        subnetwork: d.forwarding_rule.subnetwork.clone(),
        ip_version: String::new(),
    }));
    ip_to_use.map(|ip| (ip.clone(), Some(release_ours(d))))
}

/// Traffic firewalls: the one for the rule's IP, and the legacy-named one deleted once the new
/// one exists.
fn plan_traffic_firewalls(
    d: &DesiredIlb,
    o: &IlbObserved,
    cfg: &Config,
    ip: &str,
    actions: &mut Vec<Action>,
) {
    ensure_firewall(traffic_firewall(d, cfg, ip), o.firewall.as_ref(), actions);
    if o.legacy_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: d.names.legacy_firewall.clone(),
        });
    }
}

/// The IPv4 probers' firewall of the check in use; an IPv6-only Service's probes come from the
/// IPv6 range only ([`ipv6::plan_ipv6`]).
fn plan_health_check_firewall(d: &DesiredIlb, o: &IlbObserved, shared: bool, actions: &mut Vec<Action>) {
    if !d.spec.base.ipv4 {
        return;
    }
    let have_hc_fw = if shared {
        &o.nodes_health_check_firewall
    } else {
        &o.local_health_check_firewall
    };
    ensure_firewall(d.health_check_firewall.clone(), have_hc_fw.as_ref(), actions);
}

/// The health check of the other kind (upstream clearPreviousInternalResources): the service's
/// own once back on the shared one (also a leftover of an interrupted switch), the shared one
/// only when our backend service used it (others may still: kept then).
fn plan_old_check(
    d: &DesiredIlb,
    o: &IlbObserved,
    shared: bool,
    old_hc: Option<&str>,
    actions: &mut Vec<Action>,
) {
    let names = &d.names;
    if shared {
        if o.local_health_check.is_some() {
            actions.push(Action::DeleteHealthCheckV1 {
                name: names.local_health_check.clone(),
                keep_if_in_use: true,
            });
        }
        for (have, name) in [
            (&o.local_health_check_firewall, &names.local_health_check_firewall),
            (
                &o.ipv6_local_health_check_firewall,
                &names.ipv6.local_health_check_firewall,
            ),
        ] {
            if have.is_some() {
                actions.push(Action::DeleteFirewall { name: name.clone() });
            }
        }
    } else if old_hc == Some(names.nodes_health_check.as_str())
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
        for (have, name) in [
            (&o.nodes_health_check_firewall, &names.nodes_health_check_firewall),
            (
                &o.ipv6_nodes_health_check_firewall,
                &names.ipv6.shared_health_check_firewall,
            ),
        ] {
            if have.is_some() {
                actions.push(Action::DeleteFirewall { name: name.clone() });
            }
        }
    }
}
