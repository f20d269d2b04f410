//! Internal LB teardown plan (upstream ensureInternalLoadBalancerDeleted, with ingress-gce's IPv6
//! objects).

use crate::lb::internal::group_key;
use crate::naming::IlbNames;
use crate::objects::SCHEME_INTERNAL;
use crate::objects::action::Action;
use crate::objects::observed::IlbObserved;

/// Which objects a teardown may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Teardown {
    /// The Service is gone (or no LoadBalancer any more): everything named like it.
    All,
    /// The Service turned external: leave a forwarding rule or address of the external kind
    /// (the external LB, or a crash's leftover of it, shares their names).
    InternalOnly,
}

/// Upstream ensureInternalLoadBalancerDeleted: address, rule, backend service, traffic firewalls,
/// health checks and their firewalls, then the shared instance groups (kept while other internal
/// LBs use them). Only what exists is deleted; a repeated delete plans nothing.
pub(crate) fn plan_delete(names: &IlbNames, o: &IlbObserved, mode: Teardown) -> Vec<Action> {
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
    // The IPv6 rule and address share the RBS NetLB's `a<uid>-ipv6` names: kept when external.
    if let Some(fr) = &o.ipv6_forwarding_rule
        && (!internal_only || fr.load_balancing_scheme == SCHEME_INTERNAL)
    {
        actions.push(Action::DeleteForwardingRule {
            name: names.ipv6.rule.clone(),
        });
    }
    if let Some(a) = &o.ipv6_address
        && (!internal_only || a.address_type == SCHEME_INTERNAL)
    {
        actions.push(Action::DeleteAddress {
            name: names.ipv6.rule.clone(),
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
    if o.ipv6_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.ipv6.firewall.clone(),
        });
    }
    plan_delete_checks(names, o, &mut actions);
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

/// The health checks and their IPv4 and IPv6 firewalls, except a check another LB keeps.
fn plan_delete_checks(names: &IlbNames, o: &IlbObserved, actions: &mut Vec<Action>) {
    let v6 = &names.ipv6;
    for (hc, hc_present, fws) in [
        (
            &names.local_health_check,
            o.local_health_check.is_some(),
            [
                (
                    &names.local_health_check_firewall,
                    o.local_health_check_firewall.is_some(),
                ),
                (
                    &v6.local_health_check_firewall,
                    o.ipv6_local_health_check_firewall.is_some(),
                ),
            ],
        ),
        (
            &names.nodes_health_check,
            o.nodes_health_check.is_some(),
            [
                (
                    &names.nodes_health_check_firewall,
                    o.nodes_health_check_firewall.is_some(),
                ),
                (
                    &v6.shared_health_check_firewall,
                    o.ipv6_nodes_health_check_firewall.is_some(),
                ),
            ],
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
        for (fw, present) in fws {
            if present {
                actions.push(Action::DeleteFirewall { name: fw.clone() });
            }
        }
    }
}
