//! An external (target pool) LB's rounds: what each reads and decides (`lb::external::ensure`,
//! `lb::external::delete`), for the shared driver [`run_rounds`]. Ensure re-reads only what the
//! last round touched and takes the shared-health-check lock only while a plan creates or
//! deletes the shared objects; delete runs each round under that lock.
//!
//! Never imports: crate::controllers::lb::internal, crate::controllers::lb::rounds::internal.

use k8s_openapi::api::core::v1::{Node, Service};
use tokio::sync::MutexGuard;

use super::{Announce, Decision, Kept, LbGce, LbSync, RoundsFailed, run_rounds, teardown};
use crate::config::Config;
use crate::controllers::lb::shared_hc::{SharedHc, shared_keys};
use crate::gce::error::GceError;
use crate::gce::observe::ObservedLb;
use crate::gce::read::Touched;
use crate::lb;
use crate::lb::external::delete::plan_delete;
use crate::lb::external::ensure::{EnsurePlan, ensure};
use crate::lb::ownership::forwarding_rule_is_foreign;
use crate::naming::LbNames;
use crate::objects::SCHEME_INTERNAL;
use crate::objects::action::Action;

/// How an ensure ended without a failed call.
#[derive(Debug)]
pub(crate) enum Ensured {
    /// The plan is empty. `announced`: None = nothing was executed, Some(membership_only) else.
    Converged {
        plan: Box<EnsurePlan>,
        obs: Box<ObservedLb>,
        announced: Option<bool>,
    },
    /// The Service is invalid (no GCE call was made for it).
    Invalid(crate::Error),
    /// Our forwarding rule points at a backend service: another controller's LB, left alone.
    ImplementedElsewhere,
}

/// Whether executing `actions` creates or deletes the shared node health check or its firewall.
pub(crate) fn touches_shared(actions: &[Action], names: &LbNames) -> bool {
    actions.iter().any(|a| {
        matches!(
            a,
            Action::CreateHealthCheck(_)
                | Action::DeleteHealthCheck { .. }
                | Action::CreateFirewall(_)
                | Action::DeleteFirewall { .. }
        ) && (a.target_name() == names.nodes_health_check
            || a.target_name() == names.nodes_health_check_firewall)
    })
}

/// One external LB's sync input.
pub(crate) struct EnsureInput<'a> {
    pub svc: &'a Service,
    pub names: &'a LbNames,
    pub cfg: &'a Config,
    /// The Service just got our finalizer from this process: nothing of it exists in GCE yet
    /// (see `LbCtx::take_fresh`), so the first round reads only the shared objects.
    pub fresh: bool,
    /// The current nodes, read again each round.
    pub nodes: &'a (dyn Fn() -> Vec<Node> + Sync),
}

/// The previous round's observation and what its actions touched: the next round GETs only
/// those. A fresh Service starts from "nothing of ours exists" (its forwarding rule was read
/// before the finalizers went on) plus a recent read of the shared objects when there is one.
fn first_reuse(fresh: bool, shared: &SharedHc, names: &LbNames) -> Option<(ObservedLb, Touched)> {
    fresh.then(|| match shared.recent() {
        Some(seen) => (seen, Touched::new()),
        None => (ObservedLb::default(), shared_keys(names)),
    })
}

/// GCE kept the shared node health check (only it is deleted with `keep_if_in_use`): the
/// planners keep it and its firewall (`Observed::nodes_health_check_used_elsewhere`).
fn mark_kept(obs: &mut ObservedLb, kept: &Kept) {
    obs.observed.nodes_health_check_used_elsewhere = !kept.is_empty();
}

struct EnsureSync<'a> {
    input: EnsureInput<'a>,
    shared: &'a SharedHc,
    want_ip: Option<String>,
    shared_hc_key: String,
    last: Option<(ObservedLb, Touched)>,
    guard: Option<MutexGuard<'a, ()>>,
    announced: Option<bool>,
    nodes: Vec<Node>,
}

impl LbSync for EnsureSync<'_> {
    type Obs = ObservedLb;
    type Done = Ensured;

    fn start_round(&mut self) -> Option<Ensured> {
        self.nodes = (self.input.nodes)();
        None
    }

    async fn observe<G: LbGce>(&mut self, gce: &G, kept: &Kept) -> Result<ObservedLb, GceError> {
        let names = self.input.names;
        let reads_shared = self
            .last
            .as_ref()
            .is_none_or(|(_, t)| t.contains(&self.shared_hc_key));
        let reuse = self.last.as_ref().map(|(o, t)| (o, t));
        let mut obs = gce.observe(names, self.want_ip.as_deref(), reuse).await?;
        mark_kept(&mut obs, kept);
        if reads_shared && self.guard.is_none() {
            self.shared.saw(Some((&obs, names)));
        }
        Ok(obs)
    }

    /// The shared lock is taken (and the shared objects read again under it) only while a plan
    /// creates or deletes the shared objects: LBs that all found the shared check missing at
    /// once queue there, and each, re-observing under the lock, finds it created by the first
    /// and goes on in parallel.
    async fn decide(&mut self, obs: ObservedLb) -> Decision<ObservedLb, Ensured> {
        let EnsureInput { svc, names, cfg, .. } = self.input;
        let plan = match ensure(svc, &self.nodes, cfg, &obs.observed) {
            Ok(p) => p,
            Err(e) => return Decision::Done(Ensured::Invalid(e)),
        };
        if plan.implemented_elsewhere {
            return Decision::Done(Ensured::ImplementedElsewhere);
        }
        if plan.actions.is_empty() && !plan.replan {
            let (plan, obs, announced) = (Box::new(plan), Box::new(obs), self.announced);
            return Decision::Done(Ensured::Converged { plan, obs, announced });
        }
        if !touches_shared(&plan.actions, names) {
            self.guard = None;
        } else if self.guard.is_none() {
            self.guard = Some(self.shared.lock().await);
            self.shared.saw(None); // about to create or delete them
            // Our own objects are as just observed; the shared ones are read again.
            self.last = Some((obs, shared_keys(names)));
            return Decision::Again;
        }
        let mut announce = None;
        if self.announced.is_none() {
            let membership_only = plan.only_membership_changes();
            if !membership_only {
                announce = Some((lb::EVENT_ENSURING, "Ensuring load balancer"));
            }
            self.announced = Some(membership_only);
        }
        if !plan.skipped_nodes.is_empty() {
            tracing::info!(nodes = ?plan.skipped_nodes, "nodes without providerID are not in the pool yet");
        }
        Decision::Run {
            obs,
            actions: plan.actions,
            announce,
        }
    }

    fn executed(&mut self, obs: ObservedLb, actions: &[Action]) {
        self.last = Some((obs, actions.iter().map(Action::target_key).collect()));
    }

    fn not_converged(&self) -> String {
        format!(
            "load balancer {} did not converge in {} rounds",
            self.input.names.lb,
            super::MAX_ROUNDS
        )
    }
}

/// Observe -> `ensure` -> execute until the plan is empty (see [`EnsureSync::decide`] for the
/// shared lock).
pub(crate) async fn ensure_rounds(
    gce: &impl LbGce,
    events: &impl Announce,
    shared: &SharedHc,
    input: EnsureInput<'_>,
) -> Result<Ensured, RoundsFailed<ObservedLb>> {
    let want_ip = input
        .svc
        .spec
        .as_ref()
        .and_then(|s| s.load_balancer_ip.clone())
        .filter(|ip| !ip.is_empty());
    let sync = EnsureSync {
        shared_hc_key: format!("httpHealthChecks/{}", input.names.nodes_health_check),
        last: first_reuse(input.fresh, shared, input.names),
        input,
        shared,
        want_ip,
        guard: None,
        announced: None,
        nodes: Vec::new(),
    };
    run_rounds(gce, events, sync).await
}

/// Drops what belongs to an internal LB of the same names from a delete's view (the Service is
/// turning internal: its forwarding rule and address are the new LB's).
fn leave_internal_kind(obs: &mut ObservedLb) {
    let o = &mut obs.observed;
    if o.forwarding_rule
        .as_ref()
        .is_some_and(|f| f.load_balancing_scheme == SCHEME_INTERNAL)
    {
        o.forwarding_rule = None;
    }
    if o.address
        .as_ref()
        .is_some_and(|a| a.address_type == SCHEME_INTERNAL)
    {
        o.address = None;
    }
}

struct DeleteSync<'a> {
    shared: &'a SharedHc,
    names: &'a LbNames,
    switching: bool,
    guard: Option<MutexGuard<'a, ()>>,
    announced: bool,
}

impl LbSync for DeleteSync<'_> {
    type Obs = ObservedLb;
    type Done = bool;

    async fn observe<G: LbGce>(&mut self, gce: &G, kept: &Kept) -> Result<ObservedLb, GceError> {
        self.guard = None;
        self.guard = Some(self.shared.lock().await);
        self.shared.saw(None);
        let mut obs = gce.observe(self.names, None, None).await?;
        mark_kept(&mut obs, kept);
        if self.switching {
            leave_internal_kind(&mut obs);
        }
        Ok(obs)
    }

    async fn decide(&mut self, obs: ObservedLb) -> Decision<ObservedLb, bool> {
        if forwarding_rule_is_foreign(obs.observed.forwarding_rule.as_ref()) {
            tracing::info!(lb = %self.names.lb, "forwarding rule points at a backend service: nothing deleted");
        }
        let actions = plan_delete(self.names, &obs.observed);
        teardown(obs, actions, &mut self.announced, true)
    }

    fn not_converged(&self) -> String {
        format!("load balancer {} not fully deleted", self.names.lb)
    }
}

/// Observe -> `plan_delete` -> execute under the shared lock (the delete may take the shared
/// objects with it) until nothing of the LB is left. Returns whether anything was deleted
/// (the Deleting event was sent). `switching`: see [`leave_internal_kind`].
pub(crate) async fn delete_rounds(
    gce: &impl LbGce,
    events: &impl Announce,
    shared: &SharedHc,
    names: &LbNames,
    switching: bool,
) -> Result<bool, RoundsFailed<ObservedLb>> {
    let sync = DeleteSync {
        shared,
        names,
        switching,
        guard: None,
        announced: false,
    };
    run_rounds(gce, events, sync).await
}

#[cfg(test)]
mod tests;
