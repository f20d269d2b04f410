//! An internal LB's rounds: what each reads and decides (`lb::internal::plan_ensure`,
//! `lb::internal::plan_delete`), for the shared driver [`run_rounds`]. The caller holds the
//! shared-resource lock for the whole sync: internal LBs share the instance groups and the node
//! health check, which a teardown may delete.
//!
//! Never imports: crate::controllers::lb::external, crate::controllers::lb::rounds::external.

use k8s_openapi::api::core::v1::{Node, Service};

use super::{Announce, Decision, IlbObservation, Kept, LbGce, LbSync, RoundsFailed, run_rounds, teardown};
use crate::config::Config;
use crate::gce::error::GceError;
use crate::lb;
use crate::lb::backend_service::BackendServicePlan;
use crate::lb::hosts::{LbHost, lb_hosts};
use crate::lb::internal::delete::{Teardown, plan_delete};
use crate::lb::internal::plan::plan_ensure;
use crate::lb::internal::{self, IlbSpec};
use crate::naming::IlbNames;

/// How an internal LB's ensure ended without a failed call.
#[derive(Debug)]
pub(crate) enum IlbEnsured {
    /// The plan is empty. `announced`: something was executed (the Ensuring event was sent).
    Converged {
        plan: Box<BackendServicePlan>,
        obs: Box<IlbObservation>,
        announced: bool,
    },
    /// The Service cannot have a load balancer (no GCE call was made for it).
    Invalid(crate::Error),
}

/// One internal LB's sync input.
pub(crate) struct IlbInput<'a> {
    pub svc: &'a Service,
    pub spec: &'a IlbSpec,
    pub names: &'a IlbNames,
    pub cfg: &'a Config,
    /// The current nodes, read again each round.
    pub nodes: &'a (dyn Fn() -> Vec<Node> + Sync),
}

/// spec.loadBalancerIP, when set.
fn want_ip(svc: &Service) -> Option<String> {
    svc.spec
        .as_ref()
        .and_then(|s| s.load_balancer_ip.clone())
        .filter(|ip| !ip.is_empty())
}

fn kept_in_use(mut obs: IlbObservation, kept: &Kept) -> IlbObservation {
    obs.0.kept_in_use = kept.clone();
    obs
}

struct EnsureSync<'a> {
    input: IlbInput<'a>,
    want_ip: Option<String>,
    hosts: Vec<LbHost>,
    skipped: Vec<String>,
    announced: bool,
}

impl LbSync for EnsureSync<'_> {
    type Obs = IlbObservation;
    type Done = IlbEnsured;

    /// Upstream refuses an LB without hosts; decided before any read.
    fn start_round(&mut self) -> Option<IlbEnsured> {
        (self.hosts, self.skipped) = lb_hosts(&(self.input.nodes)());
        self.hosts.is_empty().then(|| {
            IlbEnsured::Invalid(crate::Error::NoEligibleNodes {
                object: self.input.spec.base.object.clone(),
            })
        })
    }

    async fn observe<G: LbGce>(&mut self, gce: &G, kept: &Kept) -> Result<IlbObservation, GceError> {
        let obs = gce
            .observe_internal(self.input.names, self.want_ip.as_deref())
            .await?;
        Ok(kept_in_use(obs, kept))
    }

    async fn decide(&mut self, obs: IlbObservation) -> Decision<IlbObservation, IlbEnsured> {
        let IlbInput { spec, names, cfg, .. } = self.input;
        let desired = internal::desired(spec, names, &self.hosts, cfg);
        let plan = plan_ensure(&desired, &obs.0, cfg);
        if plan.actions.is_empty() && !plan.replan {
            let (plan, obs, announced) = (Box::new(plan), Box::new(obs), self.announced);
            return Decision::Done(IlbEnsured::Converged { plan, obs, announced });
        }
        let announce = (!self.announced).then_some((lb::EVENT_ENSURING, "Ensuring load balancer"));
        self.announced = true;
        if !self.skipped.is_empty() {
            tracing::info!(nodes = ?self.skipped, "nodes without providerID are not in the instance groups yet");
        }
        Decision::Run {
            obs,
            actions: plan.actions,
            announce,
        }
    }

    fn not_converged(&self) -> String {
        format!("internal load balancer {} did not converge", self.input.names.lb)
    }
}

/// Observe -> `plan_ensure` -> execute until the plan is empty; a delete GCE refuses as in use
/// is remembered and re-planned around.
pub(crate) async fn ensure_ilb_rounds(
    gce: &impl LbGce,
    events: &impl Announce,
    input: IlbInput<'_>,
) -> Result<IlbEnsured, RoundsFailed<IlbObservation>> {
    let sync = EnsureSync {
        want_ip: want_ip(input.svc),
        input,
        hosts: Vec::new(),
        skipped: Vec::new(),
        announced: false,
    };
    run_rounds(gce, events, sync).await
}

struct DeleteSync<'a> {
    names: &'a IlbNames,
    mode: Teardown,
    announced: bool,
}

impl LbSync for DeleteSync<'_> {
    type Obs = IlbObservation;
    type Done = bool;

    async fn observe<G: LbGce>(&mut self, gce: &G, kept: &Kept) -> Result<IlbObservation, GceError> {
        let obs = gce.observe_internal(self.names, None).await?;
        Ok(kept_in_use(obs, kept))
    }

    async fn decide(&mut self, obs: IlbObservation) -> Decision<IlbObservation, bool> {
        let actions = plan_delete(self.names, &obs.0, self.mode);
        // Only a teardown of the whole LB is announced (a switch to external is not a delete).
        teardown(obs, actions, &mut self.announced, self.mode == Teardown::All)
    }

    fn not_converged(&self) -> String {
        format!("internal load balancer {} not fully deleted", self.names.lb)
    }
}

/// Tears the internal LB down (`mode`: everything, or only what cannot be the external LB's)
/// until nothing of it is left (shared objects other LBs use are kept). Returns whether anything
/// was deleted.
pub(crate) async fn delete_ilb_rounds(
    gce: &impl LbGce,
    events: &impl Announce,
    names: &IlbNames,
    mode: Teardown,
) -> Result<bool, RoundsFailed<IlbObservation>> {
    let sync = DeleteSync {
        names,
        mode,
        announced: false,
    };
    run_rounds(gce, events, sync).await
}

#[cfg(test)]
mod tests;
