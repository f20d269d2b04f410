//! One round driver for every load balancer sync, external, internal or RBS, ensure or delete:
//! observe GCE -> plan -> execute stage by stage, round after round until a plan is empty.
//! Generic over [`LbGce`] (the real client layer, or an in-memory GCE in unit tests),
//! [`Announce`] (events) and [`LbSync`] (one LB kind's reads and decisions: [`external`],
//! [`internal`], [`rbs`]), so every decision is tested without processes; finalizers, status and the
//! record stay with the callers (`controllers::lb`, `lb::external`, `lb::internal`).

pub(crate) mod external;
pub(crate) mod internal;
pub(crate) mod rbs;

use std::collections::BTreeSet;
use std::future::Future;

use crate::controllers::{Shared, SyncError};
use crate::gce::client::Gce;
use crate::gce::error::GceError;
use crate::gce::exec::execute;
use crate::gce::observe::{ObservedLb, observe_lb_again};
use crate::gce::observe_ilb::observe_ilb;
use crate::gce::observe_rbs::observe_rbs;
use crate::gce::outcome::Outcome;
use crate::gce::read::Touched;
use crate::gce::retry::RetryPolicy;
use crate::lb;
use crate::lb::stages::stages;
use crate::naming::l4::RbsNames;
use crate::naming::{IlbNames, LbNames};
use crate::objects::action::Action;
use crate::objects::observed::{IlbObserved, RbsObserved};

/// Rounds of observe -> plan -> execute before a sync counts as not converging, besides one
/// round per object GCE kept (see [`run_rounds`]).
pub(crate) const MAX_ROUNDS: usize = 5;

/// Target keys ([`Action::target_key`]) of deletes GCE refused earlier in this sync because
/// another load balancer uses the object ([`Outcome::KeptInUse`]).
pub(crate) type Kept = BTreeSet<String>;

/// What GCE holds for an internal LB, and the self links of what it found (for the record).
pub(crate) type IlbObservation = (IlbObserved, ObservedLb);

/// What GCE holds for an RBS NetLB, and the self links of what it found.
pub(crate) type RbsObservation = (RbsObserved, ObservedLb);

/// The GCE side of a sync.
pub(crate) trait LbGce: Sync {
    /// What GCE holds for an external LB; with `reuse = (previous, touched)` only `touched`
    /// objects are read again (see `gce::observe::observe_lb_again`).
    fn observe(
        &self,
        names: &LbNames,
        want_ip: Option<&str>,
        reuse: Option<(&ObservedLb, &Touched)>,
    ) -> impl Future<Output = Result<ObservedLb, GceError>> + Send;

    /// What GCE holds for an internal LB (see `gce::observe_ilb`).
    fn observe_internal(
        &self,
        names: &IlbNames,
        want_ip: Option<&str>,
    ) -> impl Future<Output = Result<IlbObservation, GceError>> + Send;

    /// What GCE holds for an RBS NetLB (see `gce::observe_rbs`).
    fn observe_rbs(
        &self,
        names: &RbsNames,
        want_ip: Option<&str>,
    ) -> impl Future<Output = Result<RbsObservation, GceError>> + Send;

    /// One call, its operation waited for; GCE's "already done" answers are `Ok`.
    fn execute(&self, action: &Action) -> impl Future<Output = Result<Outcome, GceError>> + Send;
}

/// Where a sync announces work it starts (Normal events on the Service).
pub(crate) trait Announce: Sync {
    fn event(&self, reason: &'static str, note: &'static str) -> impl Future<Output = ()> + Send;
}

/// An event: reason and note.
pub(crate) type Note = (&'static str, &'static str);

/// What a round decided from its observation.
pub(crate) enum Decision<O, D> {
    /// The sync ends here (converged, nothing left to delete, or nothing to do at all).
    Done(D),
    /// Observe again before planning (the sync just took a lock).
    Again,
    /// Execute `actions`, after announcing `announce`.
    Run {
        obs: O,
        actions: Vec<Action>,
        announce: Option<Note>,
    },
}

/// A delete round's decision: done once nothing is left (with whether anything was deleted),
/// else run `actions`, announced with the Deleting event the first time when `announce`.
pub(crate) fn teardown<O>(
    obs: O,
    actions: Vec<Action>,
    deleted: &mut bool,
    announce: bool,
) -> Decision<O, bool> {
    if actions.is_empty() {
        return Decision::Done(*deleted);
    }
    let announce = (announce && !*deleted).then_some((lb::EVENT_DELETING, "Deleting load balancer"));
    *deleted = true;
    Decision::Run {
        obs,
        actions,
        announce,
    }
}

/// One load balancer sync of one kind: how a round reads GCE and what it decides. The driver
/// ([`run_rounds`]) owns the loop, the round limit, events, execution and the kept objects.
pub(crate) trait LbSync: Send {
    type Obs: Send + Sync;
    type Done;

    /// Before a round's reads: ends the sync without a GCE call when the input cannot make a
    /// load balancer (read again each round, as the nodes are).
    fn start_round(&mut self) -> Option<Self::Done> {
        None
    }

    /// Reads GCE; `kept` tells the planners what GCE kept earlier in this sync.
    fn observe<G: LbGce>(
        &mut self,
        gce: &G,
        kept: &Kept,
    ) -> impl Future<Output = Result<Self::Obs, GceError>> + Send;

    /// Plans from the observation.
    fn decide(&mut self, obs: Self::Obs) -> impl Future<Output = Decision<Self::Obs, Self::Done>> + Send;

    /// After a round's actions all ran.
    fn executed(&mut self, _obs: Self::Obs, _actions: &[Action]) {}

    /// The error message of a sync that ran out of rounds.
    fn not_converged(&self) -> String;
}

/// A failed sync, with the last observation when a call (not a read) failed.
#[derive(Debug)]
pub(crate) struct RoundsFailed<O> {
    pub error: SyncError,
    pub obs: Option<O>,
}

fn failed<O>(error: impl Into<SyncError>, obs: Option<O>) -> RoundsFailed<O> {
    RoundsFailed {
        error: error.into(),
        obs,
    }
}

/// Observe -> decide -> execute until the sync is done. A plan ends early at a delete GCE kept
/// (another LB uses the object): the re-plan that leaves it out gets a round of its own beyond
/// [`MAX_ROUNDS`], so a teardown beside other internal LBs (the shared check, then each zone's
/// shared instance group kept in turn: 1 + zones + 1 rounds) finishes in any region.
pub(crate) async fn run_rounds<S: LbSync>(
    gce: &impl LbGce,
    events: &impl Announce,
    mut sync: S,
) -> Result<S::Done, RoundsFailed<S::Obs>> {
    let mut kept = Kept::new();
    let mut round = 0;
    while round < MAX_ROUNDS + kept.len() {
        round += 1;
        if let Some(done) = sync.start_round() {
            return Ok(done);
        }
        let obs = sync.observe(gce, &kept).await.map_err(|e| failed(e, None))?;
        let (obs, actions, announce) = match sync.decide(obs).await {
            Decision::Done(done) => return Ok(done),
            Decision::Again => continue,
            Decision::Run {
                obs,
                actions,
                announce,
            } => (obs, actions, announce),
        };
        if let Some((reason, note)) = announce {
            events.event(reason, note).await;
        }
        if let Err(e) = execute_plan(gce, &actions, &mut kept).await {
            return Err(failed(e, Some(obs)));
        }
        sync.executed(obs, &actions);
    }
    Err(failed(SyncError::NotConverged(sync.not_converged()), None))
}

/// Executes a plan stage by stage (see `lb::stages`): the actions of one stage concurrently,
/// waiting for all of them (operations DONE) before the next stage; the first error (in plan
/// order) is returned once every call of its stage has ended, so no call is abandoned
/// mid-flight, and no later stage runs. A delete GCE kept in use is added to `kept` and ends the
/// plan the same way (without an error): the rest of the plan assumed the object gone.
async fn execute_plan(gce: &impl LbGce, actions: &[Action], kept: &mut Kept) -> Result<(), GceError> {
    for stage in stages(actions) {
        let calls = stage.iter().map(|action| {
            tracing::debug!(
                action = action.label(),
                target = action.target_name(),
                "executing"
            );
            gce.execute(action)
        });
        let results = futures::future::join_all(calls).await;
        let mut stop = false;
        for (action, result) in stage.iter().zip(results) {
            if result? == Outcome::KeptInUse {
                kept.insert(action.target_key());
                stop = true;
            }
        }
        if stop {
            return Ok(());
        }
    }
    Ok(())
}

/// The real GCE through the official client.
pub(crate) struct RealGce<'a> {
    pub gce: &'a Gce,
    pub policy: &'a RetryPolicy,
}

impl<'a> RealGce<'a> {
    pub(crate) fn new(sh: &'a Shared) -> Self {
        RealGce {
            gce: &sh.gce,
            policy: &sh.tuning.retry,
        }
    }
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

    async fn observe_internal(
        &self,
        names: &IlbNames,
        want_ip: Option<&str>,
    ) -> Result<IlbObservation, GceError> {
        observe_ilb(self.gce, self.policy, names, want_ip).await
    }

    async fn observe_rbs(&self, names: &RbsNames, want_ip: Option<&str>) -> Result<RbsObservation, GceError> {
        observe_rbs(self.gce, self.policy, names, want_ip).await
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, GceError> {
        execute(self.gce, self.policy, action).await
    }
}
