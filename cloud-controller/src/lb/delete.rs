//! Tear-down plan: forwarding rule, target pool, health checks, their firewalls, the traffic
//! firewall, then the address. Only objects that exist are deleted, so a repeated delete plans
//! nothing and the finalizer can be removed. A user's reserved address (spec.loadBalancerIP naming
//! an address not named like the LB) is never in `observed.address` and so never released.

use crate::lb::action::Action;
use crate::lb::observed::Observed;
use crate::naming::LbNames;

pub fn plan_delete(names: &LbNames, observed: &Observed) -> Vec<Action> {
    let mut actions = Vec::new();
    if observed.forwarding_rule.is_some() {
        actions.push(Action::DeleteForwardingRule {
            name: names.lb.clone(),
        });
    }
    if observed.target_pool.is_some() {
        actions.push(Action::DeleteTargetPool {
            name: names.lb.clone(),
        });
    }
    // Health checks only after the pool referencing them is gone (GCE refuses otherwise).
    if observed.local_health_check.is_some() {
        actions.push(Action::DeleteHealthCheck {
            name: names.local_health_check.clone(),
        });
    }
    // The shared node check stays while any other pool uses it (upstream: resourceInUse is ignored).
    let shared_free = !observed.nodes_health_check_used_elsewhere;
    if shared_free && observed.nodes_health_check.is_some() {
        actions.push(Action::DeleteHealthCheck {
            name: names.nodes_health_check.clone(),
        });
    }
    if observed.local_health_check_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.local_health_check_firewall.clone(),
        });
    }
    if shared_free && observed.nodes_health_check_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.nodes_health_check_firewall.clone(),
        });
    }
    if observed.firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.firewall.clone(),
        });
    }
    if let Some(address) = &observed.address
        && address.name == names.lb
    {
        actions.push(Action::DeleteAddress {
            name: names.lb.clone(),
        });
    }
    actions
}
