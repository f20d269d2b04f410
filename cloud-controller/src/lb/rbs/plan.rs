//! RBS NetLB plan: desired vs observed -> actions in ingress-gce's order (groups, health check and
//! its firewall, backend service, address, [rule delete], rule, nodes firewall, the other kind's
//! check, address release), and the teardown (l4netlb.go EnsureLoadBalancerDeleted's order).

use crate::config::Config;
use crate::lb::backend_service::{BackendServicePlan, plan_backend_service};
use crate::lb::drift::{self, health_check_v1_differs, merged_health_check_v1};
use crate::lb::hosts::plan_group_members;
use crate::lb::rbs::ipv6::{ensure_firewall, plan_delete_ipv6, plan_ipv6, plan_unwanted_ipv6};
use crate::lb::rbs::{
    DesiredRbs, LOCALITY_MAGLEV, LOCALITY_WEIGHTED_MAGLEV, forwarding_rule_for, nodes_firewall, rules_equal,
};
use crate::naming::l4::{RbsNames, l4_description};
use crate::objects::action::Action;
use crate::objects::observed::RbsObserved;
use crate::objects::{self, Address, Backend, BackendService, Firewall};

/// ingress-gce backendSvcEqual for what svcnet sets (backends by group link).
pub(crate) fn backend_services_equal(have: &BackendService, want: &BackendService) -> bool {
    let groups = |b: &[Backend]| {
        b.iter()
            .map(|b| objects::link_key(&b.group).to_owned())
            .collect::<std::collections::BTreeSet<_>>()
    };
    let draining = |b: &BackendService| b.connection_draining.as_ref().map(|c| c.draining_timeout_sec);
    let spillover = |b: &BackendService| {
        b.network_pass_through_lb_traffic_policy
            .as_ref()
            .map(|p| p.zonal_affinity.spillover.clone())
    };
    have.protocol == want.protocol
        && have.description == want.description
        && have.session_affinity == want.session_affinity
        && have.load_balancing_scheme == want.load_balancing_scheme
        && drift::links_equal(&have.health_checks, &want.health_checks)
        && groups(&have.backends) == groups(&want.backends)
        && draining(have).unwrap_or(0) == draining(want).unwrap_or(0)
        && spillover(have) == spillover(want)
        && locality_equal(&have.locality_lb_policy, &want.locality_lb_policy)
}

/// ingress-gce backendSvcEqual: unset and MAGLEV are the same policy (MAGLEV is GCE's default).
fn locality_equal(have: &str, want: &str) -> bool {
    let norm = |p: &str| {
        if p.is_empty() {
            LOCALITY_MAGLEV.to_owned()
        } else {
            p.to_owned()
        }
    };
    norm(have) == norm(want)
}

/// The backend service to want against GCE's copy: turning weighting off on a backend service
/// that has a policy sets MAGLEV explicitly (ingress-gce EnsureL4BackendService), so the update
/// cannot leave WEIGHTED_MAGLEV in place.
fn with_locality(want: &BackendService, have: Option<&BackendService>) -> BackendService {
    let had_policy = have.is_some_and(|h| {
        h.locality_lb_policy == LOCALITY_WEIGHTED_MAGLEV || h.locality_lb_policy == LOCALITY_MAGLEV
    });
    let mut want = want.clone();
    if want.locality_lb_policy.is_empty() && had_policy {
        want.locality_lb_policy = LOCALITY_MAGLEV.to_owned();
    }
    want
}

/// Desired vs observed -> ordered calls. Empty when GCE matches.
pub(crate) fn plan_ensure(d: &DesiredRbs, o: &RbsObserved, cfg: &Config) -> BackendServicePlan {
    let names = &d.names;
    let mut actions = Vec::new();
    plan_group_members(
        &d.instance_groups,
        &o.instance_groups,
        &names.instance_group,
        &mut actions,
    );
    plan_health_check(d, o, &mut actions);
    let old_hc = plan_backend_service(
        &with_locality(&d.backend_service, o.backend_service.as_ref()),
        o.backend_service.as_ref(),
        backend_services_equal,
        &mut actions,
    );
    let ingress_ip = if d.spec.ipv4 {
        let Some(ip) = plan_ipv4(d, o, cfg, &mut actions) else {
            return replan(actions);
        };
        Some(ip)
    } else {
        plan_unwanted_ipv4(d, o, &mut actions);
        None
    };
    let ingress_ipv6 = if d.spec.ipv6 {
        let Some(ip) = plan_ipv6(d, o, cfg, &mut actions) else {
            return replan(actions);
        };
        Some(ip)
    } else {
        plan_unwanted_ipv6(d, o, &mut actions);
        None
    };
    plan_old_check(d, o, old_hc.as_deref(), &mut actions);
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

/// The IPv4 rule, its address (held while the rule is made), nodes and health-check firewalls.
/// Returns the rule's IP, or None while GCE picks the IP of a new reservation.
fn plan_ipv4(d: &DesiredRbs, o: &RbsObserved, cfg: &Config, actions: &mut Vec<Action>) -> Option<String> {
    let names = &d.names;
    let fr = o.forwarding_rule.as_ref();
    // ingress-gce IPv4ToUse: the requested IP, else the existing rule's.
    let ip_to_use = d
        .spec
        .requested_ip
        .clone()
        .or_else(|| fr.map(|f| f.ip_address.clone()).filter(|ip| !ip.is_empty()));
    let want_fr = forwarding_rule_for(d, ip_to_use.as_deref().unwrap_or(""));
    let fr_equal = fr.is_some_and(|have| rules_equal(have, &want_fr));
    let (ip, release) = if fr_equal {
        let ip = fr.map(|f| f.ip_address.clone()).unwrap_or_default();
        // The rule stays: a reservation of ours is a leftover of an interrupted creation.
        (ip, o.address.is_some().then(|| release_ours(names)))
    } else {
        hold_address(d, o, ip_to_use.as_ref(), actions)?
    };
    if !fr_equal {
        if fr.is_some() {
            actions.push(Action::DeleteForwardingRule {
                name: names.lb.clone(),
            });
        }
        actions.push(Action::CreateForwardingRule(forwarding_rule_for(d, &ip)));
    }
    plan_firewalls(d, o, cfg, &ip, actions);
    actions.extend(release);
    Some(ip)
}

/// An IPv6-only Service has no IPv4 rule, reservation or nodes firewall (ingress-gce
/// ensureDualStackResources); its health-check firewall for the IPv4 probers stays with the check
/// (GCE's IPv4 probers reach the nodes' IPv4 addresses).
fn plan_unwanted_ipv4(d: &DesiredRbs, o: &RbsObserved, actions: &mut Vec<Action>) {
    if o.forwarding_rule.as_ref().is_some_and(|f| f.target.is_empty()) {
        actions.push(Action::DeleteForwardingRule {
            name: d.names.lb.clone(),
        });
    }
    if o.address.is_some() {
        actions.push(release_ours(&d.names));
    }
    if o.nodes_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: d.names.backend.clone(),
        });
    }
    ensure_firewall(d.health_check_firewall.clone(), hc_firewall(d, o), actions);
}

fn hc_firewall<'a>(d: &DesiredRbs, o: &'a RbsObserved) -> Option<&'a Firewall> {
    if d.shared_health_check() {
        o.shared_health_check_firewall.as_ref()
    } else {
        o.local_health_check_firewall.as_ref()
    }
}

fn plan_health_check(d: &DesiredRbs, o: &RbsObserved, actions: &mut Vec<Action>) {
    let have = if d.shared_health_check() {
        &o.shared_health_check
    } else {
        &o.local_health_check
    };
    match have {
        None => actions.push(Action::CreateRegionHealthCheck(d.health_check.clone())),
        Some(have) if health_check_v1_differs(&d.health_check, have) => actions.push(
            Action::UpdateRegionHealthCheck(merged_health_check_v1(&d.health_check, have)),
        ),
        Some(_) => {}
    }
}

fn release_ours(names: &RbsNames) -> Action {
    Action::DeleteAddress {
        name: names.lb.clone(),
    }
}

/// ingress-gce HoldExternalIPv4: our reservation if it fits, a user's address holding the
/// requested IP as it is, else a new reservation `a<uid>`. Returns the IP and the release of our
/// reservation, or None while GCE picks the IP of a new one.
fn hold_address(
    d: &DesiredRbs,
    o: &RbsObserved,
    ip_to_use: Option<&String>,
    actions: &mut Vec<Action>,
) -> Option<(String, Option<Action>)> {
    let names = &d.names;
    let ours_ip = o.address.as_ref().and_then(|a| a.address.clone());
    let fits = ours_ip.is_some() && ip_to_use.is_none_or(|ip| ours_ip.as_ref() == Some(ip));
    if fits {
        return Some((ours_ip.unwrap_or_default(), Some(release_ours(names))));
    }
    let user_holds = ip_to_use.is_some_and(|ip| {
        o.ip_holder
            .as_ref()
            .is_some_and(|a| a.name != names.lb && a.address.as_ref() == Some(ip))
    });
    if user_holds {
        let ip = ip_to_use.cloned().unwrap_or_default();
        return Some((ip, o.address.is_some().then(|| release_ours(names))));
    }
    if o.address.is_some() {
        actions.push(release_ours(names));
    }
    actions.push(Action::CreateAddress(Address {
        name: names.lb.clone(),
        description: l4_description(&d.spec.service_name, ""),
        address: ip_to_use.cloned(),
        network_tier: d.spec.network_tier.clone(),
        ..Address::default()
    }));
    ip_to_use.map(|ip| (ip.clone(), Some(release_ours(names))))
}

/// The nodes firewall for the rule's IP and the health check's firewall.
fn plan_firewalls(d: &DesiredRbs, o: &RbsObserved, cfg: &Config, ip: &str, actions: &mut Vec<Action>) {
    ensure_firewall(nodes_firewall(d, cfg, ip), o.nodes_firewall.as_ref(), actions);
    ensure_firewall(d.health_check_firewall.clone(), hc_firewall(d, o), actions);
}

/// The check of the other kind once the backend service moved off it: the Service's own (and
/// its firewall) when back on the shared one; the shared one (kept if another LB uses it) only
/// when our backend service used it.
fn plan_old_check(d: &DesiredRbs, o: &RbsObserved, old_hc: Option<&str>, actions: &mut Vec<Action>) {
    let names = &d.names;
    if d.shared_health_check() {
        if o.local_health_check.is_some() {
            actions.push(Action::DeleteRegionHealthCheck {
                name: names.backend.clone(),
                keep_if_in_use: true,
            });
        }
        if o.local_health_check_firewall.is_some() {
            actions.push(Action::DeleteFirewall {
                name: names.local_health_check_firewall.clone(),
            });
        }
    } else if old_hc == Some(names.shared_health_check.as_str())
        && !o.kept_in_use.contains(&shared_hc_key(names))
    {
        if o.shared_health_check.is_some() {
            actions.push(Action::DeleteRegionHealthCheck {
                name: names.shared_health_check.clone(),
                keep_if_in_use: true,
            });
        }
        if o.shared_health_check_firewall.is_some() {
            actions.push(Action::DeleteFirewall {
                name: names.shared_health_check_firewall.clone(),
            });
        }
    }
}

fn shared_hc_key(names: &RbsNames) -> String {
    format!("regionHealthChecks/{}", names.shared_health_check)
}

/// ingress-gce EnsureLoadBalancerDeleted: the rule, our address, the nodes firewall, the backend
/// service, then each check (a check another LB still uses is kept, and so is its firewall), then
/// the shared groups (kept while another LB uses them). Only what exists is deleted.
pub(crate) fn plan_delete(names: &RbsNames, o: &RbsObserved) -> Vec<Action> {
    let mut actions = Vec::new();
    // The rule of our name is ours only when it points at our backend service (a target-pool
    // rule of the same name belongs to the target-pool LB of this Service).
    if o.forwarding_rule.as_ref().is_some_and(|f| f.target.is_empty()) {
        actions.push(Action::DeleteForwardingRule {
            name: names.lb.clone(),
        });
    }
    // Both families: the IPv6 rule also points at the backend service, which GCE keeps while in use.
    plan_delete_ipv6(names, o, &mut actions);
    if o.address.is_some() {
        actions.push(release_ours(names));
    }
    if o.nodes_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.backend.clone(),
        });
    }
    if o.backend_service.is_some() {
        actions.push(Action::DeleteBackendService {
            name: names.backend.clone(),
        });
    }
    let v6 = &names.ipv6;
    for (hc, hc_present, fws) in [
        (
            &names.backend,
            o.local_health_check.is_some(),
            [
                (&names.local_health_check_firewall, &o.local_health_check_firewall),
                (
                    &v6.local_health_check_firewall,
                    &o.ipv6_local_health_check_firewall,
                ),
            ],
        ),
        (
            &names.shared_health_check,
            o.shared_health_check.is_some(),
            [
                (
                    &names.shared_health_check_firewall,
                    &o.shared_health_check_firewall,
                ),
                (
                    &v6.shared_health_check_firewall,
                    &o.ipv6_shared_health_check_firewall,
                ),
            ],
        ),
    ] {
        if o.kept_in_use.contains(&format!("regionHealthChecks/{hc}")) {
            continue;
        }
        if hc_present {
            actions.push(Action::DeleteRegionHealthCheck {
                name: hc.clone(),
                keep_if_in_use: true,
            });
        }
        for (fw, have) in fws {
            if have.is_some() {
                actions.push(Action::DeleteFirewall { name: fw.clone() });
            }
        }
    }
    for zone in o.instance_groups.keys() {
        let key = format!("instanceGroups/{zone}/{}", names.instance_group);
        if !o.kept_in_use.contains(&key) {
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
