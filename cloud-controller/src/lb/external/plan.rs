//! Desired vs observed -> ordered GCE calls for one load balancer.
//!
//! Order (DESIGN "Ensure order"): address, traffic firewall, health check firewall + health check,
//! [forwarding rule delete], target pool, forwarding rule, then clean-up of what is no longer
//! referenced (old health check and its firewall), and last the release of our address. Pool and
//! forwarding rule are recreated only when GCE cannot change them in place:
//! - forwarding rule: IP, port range or protocol changed (or its pool is recreated);
//! - pool: session affinity changed, or (EtpTransition::Recreate, upstream's behaviour) it switches
//!   between the node and the service health check.
//!
//! Instances change by addInstance/removeInstance batches; a wrong target by setTarget.
//! When observed matches desired the plan is empty.

use std::collections::BTreeSet;

use crate::config::{Config, EtpTransition};
use crate::lb::drift;
use crate::lb::external::delete::delete_shared;
use crate::lb::external::desired::DesiredLb;
use crate::lb::spec::HealthCheckKind;
use crate::objects::action::Action;
use crate::objects::observed::Observed;
use crate::objects::{self, TargetPool};

pub(crate) fn plan_ensure(desired: &DesiredLb, observed: &Observed, cfg: &Config) -> Vec<Action> {
    let mut actions = Vec::new();
    let r = recreates(desired, observed, cfg);
    let release = plan_address(desired, observed, r.creates_fr, &mut actions);
    plan_firewalls_and_check(desired, observed, r.local, &mut actions);
    let cleanup = other_check_cleanup(desired, observed, &r);
    plan_pool_and_rule(desired, observed, cfg, &r, &mut actions);
    // The release runs after the forwarding rule's create is DONE (its own stage, last), so the
    // IP is never unheld.
    actions.extend(cleanup);
    actions.extend(release);
    actions
}

/// What this plan must recreate rather than change in place.
struct Recreates {
    /// The Service's own health check (ETP Local) is wanted, not the shared one.
    local: bool,
    /// Our pool references the health check of the other kind.
    old_hc_in_pool: bool,
    pool: bool,
    forwarding_rule: bool,
    /// The forwarding rule is created or recreated (by itself or with its pool).
    creates_fr: bool,
}

fn recreates(desired: &DesiredLb, observed: &Observed, cfg: &Config) -> Recreates {
    let names = &desired.names;
    let local = matches!(desired.health_check_kind(), HealthCheckKind::Local { .. });
    let old_hc_name = if local {
        &names.nodes_health_check
    } else {
        &names.local_health_check
    };
    let pool = observed.target_pool.as_ref();
    let old_hc_in_pool = pool.is_some_and(|p| {
        p.health_checks
            .iter()
            .any(|l| objects::link_name(l) == old_hc_name)
    });
    let pool_recreate = pool.is_some_and(|have| {
        drift::affinity_changed(&desired.target_pool.session_affinity, &have.session_affinity)
            || (cfg.etp_transition == EtpTransition::Recreate && old_hc_in_pool)
    });
    let fr = observed.forwarding_rule.as_ref();
    let fr_recreate =
        fr.is_some_and(|have| drift::forwarding_rule_needs_recreate(&desired.forwarding_rule, have));
    Recreates {
        local,
        old_hc_in_pool,
        pool: pool_recreate,
        forwarding_rule: fr_recreate,
        creates_fr: fr.is_none() || fr_recreate || pool_recreate,
    }
}

/// Address (upstream ensureExternalLoadBalancer): our reservation holds the IP only while the
/// forwarding rule is being created or recreated, and is released (the IP stays, demoted to
/// ephemeral) once the forwarding rule holds it, so LBs do not use up the static-address quota.
/// Reserved before the forwarding rule is deleted and released after it is created: a crash in
/// between leaves the reservation, from which the next sync takes the IP. A reservation found
/// while the forwarding rule stays is one such leftover: released. A user's address is never
/// touched. Returns the release, the plan's last step.
fn plan_address(
    desired: &DesiredLb,
    observed: &Observed,
    creates_fr: bool,
    actions: &mut Vec<Action>,
) -> Option<Action> {
    match (&desired.address, &observed.address) {
        (Some(want), None) if creates_fr => actions.push(Action::CreateAddress(want.clone())),
        (Some(want), Some(have)) if creates_fr && have.address != want.address => {
            actions.push(Action::DeleteAddress {
                name: have.name.clone(),
            });
            actions.push(Action::CreateAddress(want.clone()));
        }
        _ => {}
    }
    let reserved = match &desired.address {
        Some(_) => creates_fr || observed.address.is_some(),
        None => observed.address.is_some(),
    };
    reserved.then(|| Action::DeleteAddress {
        name: desired.names.lb.clone(),
    })
}

/// Traffic firewall (patchable in place), then the health check firewall and the health check
/// (upstream order).
fn plan_firewalls_and_check(
    desired: &DesiredLb,
    observed: &Observed,
    local: bool,
    actions: &mut Vec<Action>,
) {
    match &observed.firewall {
        None => actions.push(Action::CreateFirewall(desired.firewall.clone())),
        Some(have)
            if drift::firewall_differs(&desired.firewall, have, Some(&desired.firewall_ports_legacy)) =>
        {
            actions.push(Action::PatchFirewall(desired.firewall.clone()))
        }
        Some(_) => {}
    }
    let (have_hc, have_hc_fw) = if local {
        (
            &observed.local_health_check,
            &observed.local_health_check_firewall,
        )
    } else {
        (
            &observed.nodes_health_check,
            &observed.nodes_health_check_firewall,
        )
    };
    match have_hc_fw {
        None => actions.push(Action::CreateFirewall(desired.health_check_firewall.clone())),
        Some(have) if drift::firewall_differs(&desired.health_check_firewall, have, None) => {
            actions.push(Action::PatchFirewall(desired.health_check_firewall.clone()))
        }
        Some(_) => {}
    }
    match have_hc {
        None => actions.push(Action::CreateHealthCheck(desired.health_check.clone())),
        Some(have) if drift::health_check_differs(&desired.health_check, have) => actions.push(
            Action::UpdateHealthCheck(drift::merged_health_check(&desired.health_check, have)),
        ),
        Some(_) => {}
    }
}

/// The health check of the other kind: the pool may still reference it; removed once not (these
/// actions run after the pool changed).
fn other_check_cleanup(desired: &DesiredLb, observed: &Observed, r: &Recreates) -> Vec<Action> {
    let names = &desired.names;
    let mut cleanup = Vec::new();
    if r.local {
        // Our pool was a user of the shared check: try to delete it once the pool has moved to
        // ours. GCE keeps it while another pool uses it (resourceInUseByAnotherResource, see
        // `lb::external::delete`); the re-plan then knows.
        if r.old_hc_in_pool && !observed.nodes_health_check_used_elsewhere {
            cleanup.extend(delete_shared(names, observed));
        }
        return cleanup;
    }
    // A service health check left from ETP=Local is ours alone.
    if observed.local_health_check.is_some() {
        cleanup.push(Action::DeleteHealthCheck {
            name: names.local_health_check.clone(),
            keep_if_in_use: false,
        });
    }
    if observed.local_health_check_firewall.is_some() {
        cleanup.push(Action::DeleteFirewall {
            name: names.local_health_check_firewall.clone(),
        });
    }
    cleanup
}

/// Target pool and forwarding rule: recreated when they must be, else changed in place.
fn plan_pool_and_rule(
    desired: &DesiredLb,
    observed: &Observed,
    cfg: &Config,
    r: &Recreates,
    actions: &mut Vec<Action>,
) {
    let names = &desired.names;
    let want_pool = &desired.target_pool;
    let want_fr = &desired.forwarding_rule;
    let fr = observed.forwarding_rule.as_ref();
    let recreate_fr = r.forwarding_rule || r.pool;
    if fr.is_some() && recreate_fr {
        actions.push(Action::DeleteForwardingRule {
            name: names.lb.clone(),
        });
    }
    match &observed.target_pool {
        Some(_) if r.pool => {
            actions.push(Action::DeleteTargetPool {
                name: names.lb.clone(),
            });
            create_pool(want_pool, cfg, actions);
        }
        None => create_pool(want_pool, cfg, actions),
        Some(have) => update_pool(want_pool, have, cfg, actions),
    }
    match fr {
        Some(_) if recreate_fr => actions.push(Action::CreateForwardingRule(want_fr.clone())),
        None => actions.push(Action::CreateForwardingRule(want_fr.clone())),
        Some(have) if !objects::same_link(&have.target, &want_fr.target) => actions.push(Action::SetTarget {
            forwarding_rule: names.lb.clone(),
            target: want_fr.target.clone(),
        }),
        Some(_) => {}
    }
}

/// Insert with the first `create_instances_max` members, the rest as addInstance batches
/// (upstream ensureTargetPoolAndHealthCheck).
fn create_pool(want: &TargetPool, cfg: &Config, actions: &mut Vec<Action>) {
    let first = cfg.create_instances_max.max(1).min(want.instances.len());
    let (now, later) = want.instances.split_at(first);
    actions.push(Action::CreateTargetPool(TargetPool {
        instances: now.to_vec(),
        ..want.clone()
    }));
    push_batches(&want.name, later, cfg, actions, true);
}

fn update_pool(want: &TargetPool, have: &TargetPool, cfg: &Config, actions: &mut Vec<Action>) {
    let have_keys: BTreeSet<&str> = have.instances.iter().map(|l| objects::instance_key(l)).collect();
    let want_keys: BTreeSet<&str> = want.instances.iter().map(|l| objects::instance_key(l)).collect();
    let add: Vec<String> = want
        .instances
        .iter()
        .filter(|l| !have_keys.contains(objects::instance_key(l)))
        .cloned()
        .collect();
    let mut remove: Vec<String> = have
        .instances
        .iter()
        .filter(|l| !want_keys.contains(objects::instance_key(l)))
        .cloned()
        .collect();
    remove.sort();
    remove.dedup();
    push_batches(&want.name, &add, cfg, actions, true);
    push_batches(&want.name, &remove, cfg, actions, false);

    // Health check membership (a pool holds at most one): drop foreign links, add ours.
    if !drift::links_equal(&have.health_checks, &want.health_checks) {
        for link in &have.health_checks {
            if !want.health_checks.iter().any(|w| objects::same_link(w, link)) {
                actions.push(Action::RemoveHealthCheck {
                    pool: want.name.clone(),
                    health_check: link.clone(),
                });
            }
        }
        for link in &want.health_checks {
            if !have.health_checks.iter().any(|h| objects::same_link(h, link)) {
                actions.push(Action::AddHealthCheck {
                    pool: want.name.clone(),
                    health_check: link.clone(),
                });
            }
        }
    }
}

fn push_batches(pool: &str, instances: &[String], cfg: &Config, actions: &mut Vec<Action>, add: bool) {
    for chunk in instances.chunks(cfg.instance_batch.max(1)) {
        let (pool, instances) = (pool.to_owned(), chunk.to_vec());
        actions.push(if add {
            Action::AddInstances { pool, instances }
        } else {
            Action::RemoveInstances { pool, instances }
        });
    }
}

#[cfg(test)]
mod tests;
