//! A backend-service (RBS) NetLB's rounds: what each reads and decides (`lb::rbs::plan`), for the
//! shared driver [`run_rounds`]. The caller holds the shared-resource lock for the whole sync:
//! RBS NetLBs share the instance groups with the internal LBs and the regional health check
//! among themselves, which a teardown may delete.
//!
//! Never imports: crate::controllers::lb::external, crate::controllers::lb::rounds::external, crate::controllers::lb::internal, crate::controllers::lb::rounds::internal.

use k8s_openapi::api::core::v1::Node;

use super::{Announce, Decision, Kept, LbGce, LbSync, RbsObservation, RoundsFailed, run_rounds, teardown};
use crate::config::Config;
use crate::gce::error::GceError;
use crate::lb;
use crate::lb::backend_service::BackendServicePlan;
use crate::lb::hosts::{LbHost, lb_hosts};
use crate::lb::rbs::plan::{plan_delete, plan_ensure};
use crate::lb::rbs::{self, DesiredRbs};
use crate::lb::spec::LbSpec;
use crate::naming::l4::RbsNames;
use crate::objects;

/// How an RBS NetLB's ensure ended without a failed call.
#[derive(Debug)]
pub(crate) enum RbsEnsured {
    /// The plan is empty. `announced`: something was executed (the Ensuring event was sent).
    Converged {
        plan: Box<BackendServicePlan>,
        desired: Box<DesiredRbs>,
        obs: Box<RbsObservation>,
        announced: bool,
    },
    /// The Service cannot have a load balancer (no GCE call was made for it).
    Invalid(crate::Error),
}

/// One RBS NetLB's sync input.
pub(crate) struct RbsInput<'a> {
    pub spec: &'a LbSpec,
    pub names: &'a RbsNames,
    pub cfg: &'a Config,
    /// The current nodes, read again each round.
    pub nodes: &'a (dyn Fn() -> Vec<Node> + Sync),
}

fn kept_in_use(mut obs: RbsObservation, kept: &Kept) -> RbsObservation {
    obs.0.kept_in_use = kept.clone();
    obs
}

struct EnsureSync<'a> {
    input: RbsInput<'a>,
    hosts: Vec<LbHost>,
    announced: bool,
}

impl LbSync for EnsureSync<'_> {
    type Obs = RbsObservation;
    type Done = RbsEnsured;

    /// ingress-gce refuses an LB without nodes too; decided before any read.
    fn start_round(&mut self) -> Option<RbsEnsured> {
        let skipped;
        (self.hosts, skipped) = lb_hosts(&(self.input.nodes)());
        if !skipped.is_empty() {
            tracing::debug!(nodes = ?skipped, "nodes without providerID are not in the instance groups yet");
        }
        self.hosts.is_empty().then(|| {
            RbsEnsured::Invalid(crate::Error::NoEligibleNodes {
                object: self.input.spec.object.clone(),
            })
        })
    }

    async fn observe<G: LbGce>(&mut self, gce: &G, kept: &Kept) -> Result<RbsObservation, GceError> {
        let want_ip = self.input.spec.requested_ip.as_deref();
        let obs = gce.observe_rbs(self.input.names, want_ip).await?;
        Ok(kept_in_use(obs, kept))
    }

    async fn decide(&mut self, obs: RbsObservation) -> Decision<RbsObservation, RbsEnsured> {
        let RbsInput { spec, names, cfg, .. } = self.input;
        let desired = rbs::desired(spec, names, &self.hosts, cfg);
        let plan = plan_ensure(&desired, &obs.0, cfg);
        if plan.actions.is_empty() && !plan.replan {
            return Decision::Done(RbsEnsured::Converged {
                plan: Box::new(plan),
                desired: Box::new(desired),
                obs: Box::new(obs),
                announced: self.announced,
            });
        }
        let announce = (!self.announced).then_some((lb::EVENT_ENSURING, "Ensuring load balancer"));
        self.announced = true;
        Decision::Run {
            obs,
            actions: plan.actions,
            announce,
        }
    }

    fn not_converged(&self) -> String {
        format!(
            "backend-service load balancer {} did not converge",
            self.input.names.lb
        )
    }
}

/// Observe -> `plan_ensure` -> execute until the plan is empty; a delete GCE refuses as in use
/// is remembered and re-planned around.
pub(crate) async fn ensure_rbs_rounds(
    gce: &impl LbGce,
    events: &impl Announce,
    input: RbsInput<'_>,
) -> Result<RbsEnsured, RoundsFailed<RbsObservation>> {
    let sync = EnsureSync {
        input,
        hosts: Vec::new(),
        announced: false,
    };
    run_rounds(gce, events, sync).await
}

struct DeleteSync<'a> {
    names: &'a RbsNames,
    cfg: &'a Config,
    announce: bool,
    announced: bool,
}

impl LbSync for DeleteSync<'_> {
    type Obs = RbsObservation;
    type Done = bool;

    async fn observe<G: LbGce>(&mut self, gce: &G, kept: &Kept) -> Result<RbsObservation, GceError> {
        let mut obs = gce.observe_rbs(self.names, None).await?;
        // The rule of the shared `a<uid>` name is ours only when it points at our backend
        // service: a target-pool or internal LB's rule of that name is left to its teardown.
        let ours = self.cfg.backend_service_url(&self.names.backend);
        if obs
            .0
            .forwarding_rule
            .as_ref()
            .is_some_and(|f| !objects::same_link(&f.backend_service, &ours))
        {
            obs.0.forwarding_rule = None;
        }
        Ok(kept_in_use(obs, kept))
    }

    async fn decide(&mut self, obs: RbsObservation) -> Decision<RbsObservation, bool> {
        let actions = plan_delete(self.names, &obs.0);
        teardown(obs, actions, &mut self.announced, self.announce)
    }

    fn not_converged(&self) -> String {
        format!(
            "backend-service load balancer {} not fully deleted",
            self.names.lb
        )
    }
}

/// Tears the RBS NetLB down until nothing of it is left (shared objects other LBs use are kept).
/// `announce`: a Deleting event (not for a switch to another kind). Returns whether anything was
/// deleted.
pub(crate) async fn delete_rbs_rounds(
    gce: &impl LbGce,
    events: &impl Announce,
    names: &RbsNames,
    cfg: &Config,
    announce: bool,
) -> Result<bool, RoundsFailed<RbsObservation>> {
    let sync = DeleteSync {
        names,
        cfg,
        announce,
        announced: false,
    };
    run_rounds(gce, events, sync).await
}

#[cfg(test)]
mod tests;
