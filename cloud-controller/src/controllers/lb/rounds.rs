//! The round loops of an external load balancer's sync: observe GCE -> plan (`lb::external::ensure`, or
//! `lb::external::delete`) -> execute stage by stage, round after round until a plan is empty. Generic over
//! [`LbGce`] (the real client layer, or an in-memory GCE in unit tests) and [`Announce`]
//! (events), so the decisions are tested without processes; finalizers, status and the record
//! stay with the caller (`service_lb`).

use std::future::Future;

use k8s_openapi::api::core::v1::{Node, Service};

use crate::config::Config;
use crate::controllers::SyncError;
use crate::controllers::lb::shared_hc::{SharedHc, shared_keys};
use crate::gce::client::Gce;
use crate::gce::error::GceError;
use crate::gce::exec::execute;
use crate::gce::observe::{ObservedLb, observe_lb_again};
use crate::gce::outcome::Outcome;
use crate::gce::read::Touched;
use crate::gce::retry::RetryPolicy;
use crate::lb::external::delete::plan_delete;
use crate::lb::external::ensure::{EnsurePlan, ensure};
use crate::lb::ownership::forwarding_rule_is_foreign;
use crate::lb::stages::stages;
use crate::lb::{self, internal::SCHEME_INTERNAL};
use crate::naming::LbNames;
use crate::objects::action::Action;

/// Rounds of observe -> plan -> execute before a sync counts as not converging.
pub(crate) const MAX_ROUNDS: usize = 5;

/// The GCE side of a sync.
pub(crate) trait LbGce: Sync {
    /// What GCE holds for the LB; with `reuse = (previous, touched)` only `touched` objects are
    /// read again (see `gce::observe::observe_lb_again`).
    fn observe(
        &self,
        names: &LbNames,
        want_ip: Option<&str>,
        reuse: Option<(&ObservedLb, &Touched)>,
    ) -> impl Future<Output = Result<ObservedLb, GceError>> + Send;

    /// One call, its operation waited for; GCE's "already done" answers are `Ok`.
    fn execute(&self, action: &Action) -> impl Future<Output = Result<Outcome, GceError>> + Send;
}

/// Where a sync announces work it starts (Normal events on the Service).
pub(crate) trait Announce: Sync {
    fn event(&self, reason: &'static str, note: &'static str) -> impl Future<Output = ()> + Send;
}

/// The real GCE through the official client.
pub(crate) struct RealGce<'a> {
    pub gce: &'a Gce,
    pub policy: &'a RetryPolicy,
}

impl LbGce for RealGce<'_> {
    async fn observe(
        &self,
        names: &LbNames,
        want_ip: Option<&str>,
        reuse: Option<(&ObservedLb, &Touched)>,
    ) -> Result<ObservedLb, GceError> {
        observe_lb_again(self.gce, self.policy, names, want_ip, reuse).await
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, GceError> {
        execute(self.gce, self.policy, action).await
    }
}

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

/// A failed sync, with the last observation when a call (not a read) failed.
#[derive(Debug)]
pub(crate) struct RoundsFailed {
    pub error: SyncError,
    pub obs: Option<ObservedLb>,
}

fn failed(error: impl Into<SyncError>, obs: Option<ObservedLb>) -> RoundsFailed {
    RoundsFailed {
        error: error.into(),
        obs,
    }
}

/// How a plan's execution ended when no call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlanEnd {
    Complete,
    /// GCE kept the shared node health check (in use by another pool): the rest of the plan
    /// (its firewall) was not run; the caller re-plans with `nodes_health_check_used_elsewhere`.
    SharedKept,
}

/// Executes a plan stage by stage (see `lb::stages`): the actions of one stage concurrently,
/// waiting for all of them (operations DONE) before the next stage; the first error (in plan
/// order) is returned once every call of its stage has ended, so no call is abandoned
/// mid-flight, and no later stage runs. A kept shared health check ends the plan the same way
/// (without an error).
async fn execute_plan(gce: &impl LbGce, service: &str, actions: &[Action]) -> Result<PlanEnd, GceError> {
    for stage in stages(actions) {
        let calls = stage.iter().map(|action| {
            tracing::debug!(
                service,
                action = action.label(),
                target = action.target_name(),
                "executing"
            );
            gce.execute(action)
        });
        let mut kept = false;
        for result in futures::future::join_all(calls).await {
            kept |= result? == Outcome::KeptInUse;
        }
        if kept {
            return Ok(PlanEnd::SharedKept);
        }
    }
    Ok(PlanEnd::Complete)
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

/// Observe -> `ensure` -> execute until the plan is empty. The shared lock is taken (and the
/// shared objects read again under it) only while a plan creates or deletes the shared objects:
/// LBs that all found the shared check missing at once queue there, and each, re-observing under
/// the lock, finds it created by the first and goes on in parallel.
pub(crate) async fn ensure_rounds(
    gce: &impl LbGce,
    events: &impl Announce,
    shared: &SharedHc,
    input: EnsureInput<'_>,
) -> Result<Ensured, RoundsFailed> {
    let EnsureInput { svc, names, cfg, .. } = input;
    let service = crate::controllers::key(svc);
    let want_ip = svc
        .spec
        .as_ref()
        .and_then(|s| s.load_balancer_ip.clone())
        .filter(|ip| !ip.is_empty());
    let shared_hc_key = format!("httpHealthChecks/{}", names.nodes_health_check);
    let mut last = first_reuse(input.fresh, shared, names);
    let mut guard = None;
    let mut announced: Option<bool> = None;
    // GCE kept the shared node health check on our delete (another pool uses it): see `lb::external::delete`.
    let mut shared_kept = false;
    for _ in 0..MAX_ROUNDS {
        let nodes = (input.nodes)();
        let reads_shared = last.as_ref().is_none_or(|(_, t)| t.contains(&shared_hc_key));
        let reuse = last.as_ref().map(|(o, t)| (o, t));
        let mut obs = gce
            .observe(names, want_ip.as_deref(), reuse)
            .await
            .map_err(|e| failed(e, None))?;
        obs.observed.nodes_health_check_used_elsewhere = shared_kept;
        if reads_shared && guard.is_none() {
            shared.saw(Some((&obs, names)));
        }
        let plan = match ensure(svc, &nodes, cfg, &obs.observed) {
            Ok(p) => p,
            Err(e) => return Ok(Ensured::Invalid(e)),
        };
        if plan.implemented_elsewhere {
            return Ok(Ensured::ImplementedElsewhere);
        }
        if plan.actions.is_empty() && !plan.replan {
            let (plan, obs) = (Box::new(plan), Box::new(obs));
            return Ok(Ensured::Converged { plan, obs, announced });
        }
        if !touches_shared(&plan.actions, names) {
            guard = None;
        } else if guard.is_none() {
            guard = Some(shared.lock().await);
            shared.saw(None); // about to create or delete them
            // Our own objects are as just observed; the shared ones are read again.
            last = Some((obs, shared_keys(names)));
            continue;
        }
        if announced.is_none() {
            let membership_only = plan.only_membership_changes();
            if !membership_only {
                events.event(lb::EVENT_ENSURING, "Ensuring load balancer").await;
            }
            announced = Some(membership_only);
        }
        if !plan.skipped_nodes.is_empty() {
            tracing::info!(%service, nodes = ?plan.skipped_nodes, "nodes without providerID are not in the pool yet");
        }
        match execute_plan(gce, &service, &plan.actions).await {
            Ok(PlanEnd::Complete) => {}
            Ok(PlanEnd::SharedKept) => shared_kept = true,
            Err(e) => return Err(failed(e, Some(obs))),
        }
        last = Some((obs, plan.actions.iter().map(Action::target_key).collect()));
    }
    let msg = format!(
        "load balancer {} did not converge in {MAX_ROUNDS} rounds",
        names.lb
    );
    Err(failed(SyncError::NotConverged(msg), None))
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

/// Observe -> `plan_delete` -> execute under the shared lock (the delete may take the shared
/// objects with it) until nothing of the LB is left. Returns whether anything was deleted
/// (the Deleting event was sent). `switching`: see [`leave_internal_kind`].
pub(crate) async fn delete_rounds(
    gce: &impl LbGce,
    events: &impl Announce,
    shared: &SharedHc,
    names: &LbNames,
    switching: bool,
) -> Result<bool, RoundsFailed> {
    let mut announced = false;
    // GCE kept the shared node health check (another pool uses it): keep it and its firewall.
    let mut shared_kept = false;
    for _ in 0..MAX_ROUNDS {
        let _guard = shared.lock().await;
        shared.saw(None);
        let mut obs = gce
            .observe(names, None, None)
            .await
            .map_err(|e| failed(e, None))?;
        obs.observed.nodes_health_check_used_elsewhere = shared_kept;
        if switching {
            leave_internal_kind(&mut obs);
        }
        if forwarding_rule_is_foreign(obs.observed.forwarding_rule.as_ref()) {
            tracing::info!(lb = %names.lb, "forwarding rule points at a backend service: nothing deleted");
        }
        let actions = plan_delete(names, &obs.observed);
        if actions.is_empty() {
            return Ok(announced);
        }
        if !announced {
            events.event(lb::EVENT_DELETING, "Deleting load balancer").await;
            announced = true;
        }
        match execute_plan(gce, &names.lb, &actions).await {
            Ok(PlanEnd::Complete) => {}
            Ok(PlanEnd::SharedKept) => shared_kept = true,
            Err(e) => return Err(failed(e, Some(obs))),
        }
    }
    let msg = format!("load balancer {} not fully deleted", names.lb);
    Err(failed(SyncError::NotConverged(msg), None))
}

#[cfg(test)]
mod tests;
