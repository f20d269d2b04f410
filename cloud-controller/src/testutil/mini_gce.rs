//! `MiniGce`, a tiny in-memory GCE that applies [`Action`]s of every LB kind ([`external`],
//! [`internal`], [`rbs`]) with the constraints real GCE enforces (409 on duplicate insert, 404 on missing,
//! resourceInUse on referenced objects, one health check per pool), so an ill-ordered plan fails
//! the test instead of passing silently.
//! It is synchronous and speaks `Action`s, not REST: property tests run thousands of plans
//! through it in milliseconds, which the REST-level `svcnet-fake-gce` process cannot do.

use std::collections::BTreeMap;

use super::Scenario;
use crate::naming::LbNames;
use crate::objects::action::Action;
use crate::objects::observed::Observed;
use crate::objects::{
    Address, BackendService, Firewall, ForwardingRule, HealthCheck, HttpHealthCheck, TargetPool,
};

mod external;
mod internal;
mod rbs;

/// In-memory GCE holding the objects by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MiniGce {
    pub addresses: BTreeMap<String, Address>,
    pub firewalls: BTreeMap<String, Firewall>,
    pub health_checks: BTreeMap<String, HttpHealthCheck>,
    pub pools: BTreeMap<String, TargetPool>,
    pub forwarding_rules: BTreeMap<String, ForwardingRule>,
    /// Internal LBs: health checks (the healthChecks collection), backend services, and the
    /// instance groups by `zone/name` with their member instance URLs.
    pub health_checks_v1: BTreeMap<String, HealthCheck>,
    pub backend_services: BTreeMap<String, BackendService>,
    pub instance_groups: BTreeMap<String, Vec<String>>,
    /// RBS NetLBs' regional health checks.
    pub region_health_checks: BTreeMap<String, HealthCheck>,
    pub next_ip: u8,
    pub calls: usize,
    /// Shared health check deletes refused as in use and counted as done ([`MiniGce::run_plan`]).
    pub kept: usize,
}

pub(super) fn insert<T: Clone>(map: &mut BTreeMap<String, T>, name: &str, value: &T) -> Result<(), String> {
    if map.contains_key(name) {
        return Err(format!("409 alreadyExists: {name}"));
    }
    map.insert(name.to_owned(), value.clone());
    Ok(())
}

pub(super) fn remove<T>(map: &mut BTreeMap<String, T>, name: &str) -> Result<T, String> {
    map.remove(name).ok_or_else(|| format!("404 notFound: {name}"))
}

/// Replaces the check of `h`'s name in `checks`; 404 when there is none.
pub(super) fn update_check(
    checks: &mut BTreeMap<String, HealthCheck>,
    h: &HealthCheck,
) -> Result<(), String> {
    match checks.get_mut(&h.name) {
        Some(have) => {
            *have = h.clone();
            Ok(())
        }
        None => Err(format!("404 notFound: health check {}", h.name)),
    }
}

impl MiniGce {
    /// Deletes the regional or global health check `name`, refused while a backend service lists it.
    pub(super) fn delete_check(&mut self, name: &str, regional: bool) -> Result<(), String> {
        let used = self.backend_services.values().any(|b| {
            b.health_checks
                .iter()
                .any(|l| l.contains("/regions/") == regional && crate::objects::link_name(l) == name)
        });
        if used {
            return Err(format!("400 resourceInUseByAnotherResource: health check {name}"));
        }
        let checks = if regional {
            &mut self.region_health_checks
        } else {
            &mut self.health_checks_v1
        };
        remove(checks, name).map(drop)
    }

    /// The address holding `want_ip`, whatever its name.
    pub(super) fn address_holding(&self, want_ip: Option<&str>) -> Option<Address> {
        let ip = want_ip?;
        self.addresses
            .values()
            .find(|a| a.address.as_deref() == Some(ip))
            .cloned()
    }

    /// zone -> members of the instance groups named `group`.
    pub(super) fn groups_named(&self, group: &str) -> BTreeMap<String, Vec<String>> {
        self.instance_groups
            .iter()
            .filter_map(|(id, members)| {
                let (zone, name) = id.split_once('/')?;
                (name == group).then(|| (zone.to_owned(), members.clone()))
            })
            .collect()
    }
}

impl MiniGce {
    /// A user's reserved address (not created by the controller).
    pub(crate) fn reserve_user_address(&mut self, name: &str, ip: &str, tier: &str) {
        self.addresses.insert(
            name.into(),
            Address {
                name: name.into(),
                description: String::new(),
                address: Some(ip.into()),
                network_tier: tier.into(),
                ..Address::default()
            },
        );
    }

    /// Applies one call as GCE would; errors read "NNN reason: detail".
    pub(crate) fn apply(&mut self, action: &Action) -> Result<(), String> {
        self.calls += 1;
        self.apply_external(action)
            .or_else(|| self.apply_internal(action))
            .or_else(|| self.apply_rbs(action))
            .unwrap_or_else(|| Err(format!("MiniGce does not model {}", action.label())))
    }

    pub(crate) fn apply_all(&mut self, actions: &[Action]) -> Result<(), String> {
        actions.iter().try_for_each(|a| self.apply(a))
    }

    /// What the I/O layer would GET for this load balancer.
    pub(crate) fn observed(&self, names: &LbNames, requested_ip: Option<&str>) -> Observed {
        let fr = self.forwarding_rules.get(&names.lb).cloned();
        let holder_ip = requested_ip
            .map(str::to_owned)
            .or_else(|| fr.as_ref().map(|f| f.ip_address.clone()));
        Observed {
            address: self.addresses.get(&names.lb).cloned(),
            ip_holder: holder_ip.and_then(|ip| {
                self.addresses
                    .values()
                    .find(|a| a.address.as_deref() == Some(&ip))
                    .cloned()
            }),
            firewall: self.firewalls.get(&names.firewall).cloned(),
            nodes_health_check: self.health_checks.get(&names.nodes_health_check).cloned(),
            nodes_health_check_firewall: self.firewalls.get(&names.nodes_health_check_firewall).cloned(),
            local_health_check: self.health_checks.get(&names.local_health_check).cloned(),
            local_health_check_firewall: self.firewalls.get(&names.local_health_check_firewall).cloned(),
            target_pool: self.pools.get(&names.lb).cloned(),
            forwarding_rule: fr,
            // Never listed: the I/O layer learns it from a kept delete (see `run_plan`).
            nodes_health_check_used_elsewhere: false,
        }
    }

    /// Applies a plan the way the I/O layer executes it: in order, stopping at the first error;
    /// a `DeleteHealthCheck { keep_if_in_use: true }` refused with resourceInUseByAnotherResource
    /// counts as done-but-kept and ends the plan there. Returns how many actions ran and whether
    /// the plan ended on such a kept delete.
    pub(crate) fn run_plan(&mut self, actions: &[Action]) -> Result<(usize, bool), String> {
        for (i, action) in actions.iter().enumerate() {
            match self.apply(action) {
                Ok(()) => {}
                Err(e)
                    if matches!(
                        action,
                        Action::DeleteHealthCheck {
                            keep_if_in_use: true,
                            ..
                        }
                    ) && e.contains("resourceInUseByAnotherResource") =>
                {
                    self.kept += 1;
                    return Ok((i + 1, true));
                }
                Err(e) => return Err(e),
            }
        }
        Ok((actions.len(), false))
    }

    /// The delete path of the I/O layer: observe -> `plan_delete` -> run until a plan is empty
    /// (then the finalizer may go). Returns every action applied, in order.
    pub(crate) fn delete_lb(&mut self, names: &LbNames, max_rounds: usize) -> Result<Vec<Action>, String> {
        let mut applied = Vec::new();
        let mut kept = false;
        for _ in 0..max_rounds {
            let mut observed = self.observed(names, None);
            observed.nodes_health_check_used_elsewhere = kept;
            let plan = crate::lb::external::delete::plan_delete(names, &observed);
            if plan.is_empty() {
                return Ok(applied);
            }
            let (ran, kept_now) = self.run_plan(&plan)?;
            kept |= kept_now;
            applied.extend(plan.into_iter().take(ran));
        }
        Err(format!(
            "delete did not settle in {max_rounds} rounds: {applied:#?}"
        ))
    }

    /// Plan/apply until a plan is empty; returns every action applied, in order.
    /// Fails if a plan is rejected by GCE rules or it does not settle in `max_rounds`.
    pub(crate) fn converge(&mut self, scenario: &Scenario, max_rounds: usize) -> Result<Vec<Action>, String> {
        let names = scenario.names();
        let mut applied = Vec::new();
        let mut kept = false;
        for _ in 0..max_rounds {
            let mut observed = self.observed(&names, scenario.requested_ip().as_deref());
            observed.nodes_health_check_used_elsewhere = kept;
            let plan = scenario.ensure(&observed).map_err(|e| e.to_string())?;
            if plan.actions.is_empty() {
                return Ok(applied);
            }
            let (ran, kept_now) = self.run_plan(&plan.actions)?;
            kept |= kept_now;
            applied.extend(plan.actions.into_iter().take(ran));
        }
        Err(format!("no convergence after {max_rounds} rounds: {applied:#?}"))
    }
}
