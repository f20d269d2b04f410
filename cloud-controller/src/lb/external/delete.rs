//! Tear-down plan: forwarding rule, target pool, the LB's own health check and firewalls, the
//! address, and last the shared node health check, then its firewall. Only objects that exist are
//! deleted, so a repeated delete plans nothing and the finalizer can be removed. A user's reserved
//! address (spec.loadBalancerIP naming an address not named like the LB) is never in
//! `observed.address` and so never released.
//!
//! The shared node health check is deleted whenever it exists, without asking who else uses it
//! (upstream ensureHTTPHealthCheckDeleted): GCE refuses while another LB's pool references it
//! (400 resourceInUseByAnotherResource), the executor counts that as done-but-kept
//! ([`crate::gce::outcome::Outcome::KeptInUse`]) and stops the plan there, and the I/O layer re-plans
//! with `nodes_health_check_used_elsewhere` set, which keeps the check and its firewall. It comes
//! last so that stop skips nothing but its firewall, which must stay while the check is used.
//!
//! A forwarding rule named like the LB that points at a backend service is another controller's
//! ([`crate::lb::ownership::forwarding_rule_is_foreign`]): then nothing is deleted at all.

use crate::lb::ownership::forwarding_rule_is_foreign;
use crate::naming::LbNames;
use crate::objects::action::Action;
use crate::objects::observed::Observed;

pub(crate) fn plan_delete(names: &LbNames, observed: &Observed) -> Vec<Action> {
    let mut actions = Vec::new();
    if forwarding_rule_is_foreign(observed.forwarding_rule.as_ref()) {
        return actions;
    }
    if observed.forwarding_rule.is_some() {
        actions.push(Action::DeleteForwardingRule {
            name: names.lb.clone(),
        });
    }
    // Its own stage: its operation is DONE before any health check delete is tried, so GCE never
    // refuses (or, for the shared check, keeps) a check because of our own pool.
    if observed.target_pool.is_some() {
        actions.push(Action::DeleteTargetPool {
            name: names.lb.clone(),
        });
    }
    if observed.local_health_check.is_some() {
        actions.push(Action::DeleteHealthCheck {
            name: names.local_health_check.clone(),
            keep_if_in_use: false,
        });
    }
    if observed.local_health_check_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.local_health_check_firewall.clone(),
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
    // Known to be in use (GCE said so earlier in this sync): keep the check and its firewall.
    if !observed.nodes_health_check_used_elsewhere {
        actions.extend(delete_shared(names, observed));
    }
    actions
}

/// The shared node health check, then its firewall (upstream deletes the firewall only once the
/// check is gone; a check already gone, e.g. after a crash between the two, still takes the
/// firewall with it).
pub(crate) fn delete_shared(names: &LbNames, observed: &Observed) -> Vec<Action> {
    let mut actions = Vec::new();
    if observed.nodes_health_check.is_some() {
        actions.push(Action::DeleteHealthCheck {
            name: names.nodes_health_check.clone(),
            keep_if_in_use: true,
        });
    }
    if observed.nodes_health_check_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.nodes_health_check_firewall.clone(),
        });
    }
    actions
}
