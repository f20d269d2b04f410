//! Service load balancer controller: a kube-runtime `Controller` over Services. Services of type
//! LoadBalancer get our finalizers and an external target-pool load balancer ([`external`]), or
//! an internal one ([`internal`]) when annotated Internal; switching kinds tears the old one down
//! first; deleting the Service (or changing its type) tears it down and removes the finalizers.
//! Node membership changes re-reconcile every Service.
//!
//! Per reconcile (one tracing span carrying the Service's key): [`step::next_step`] decides from
//! the Service what comes next; both kinds run their rounds (observe -> plan -> execute) through
//! one driver ([`rounds`]); what the controller remembers between syncs is in [`ctx`], events,
//! status and records in [`report`] and [`record`]. After a start, converged load balancers are
//! re-verified behind new and changed ones ([`verify_queue`]).

pub(crate) mod ctx;
pub(crate) mod external;
pub(crate) mod internal;
pub(crate) mod rbs;
pub(crate) mod record;
pub(crate) mod report;
pub(crate) mod rounds;
pub(crate) mod shared_hc;
pub(crate) mod step;
pub(crate) mod verify_queue;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action as Requeue, Controller};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::json;

use self::ctx::LbCtx;
use self::external::{cleanup, ensure_lb};
use self::internal::{cleanup_ilb, ensure_ilb};
use self::rbs::{cleanup_rbs, ensure_rbs, without_status_annotations};
use self::report::patch_ingress;
use self::step::{Step, next_step};
use crate::controllers::node_watch::{NodeTriggers, changes};
use crate::controllers::{SyncError, error_delay, key};
use crate::gce::observe::forwarding_rule;
use crate::lb::external::ensure::lb_names;
use crate::lb::internal::delete::Teardown;
use crate::lb::ownership::{
    ILB_FINALIZER, LB_CLEANUP_FINALIZER, NETLB_FINALIZER, RBS_FINALIZER, finalizers_with,
    finalizers_with_ours, forwarding_rule_is_foreign, has_finalizer,
};

/// Runs the controller until `shutdown` resolves.
pub(crate) async fn run(
    shared: Arc<crate::controllers::Shared>,
    triggers: NodeTriggers,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let api: Api<Service> = Api::all(shared.client.clone());
    let concurrency = u16::try_from(shared.tuning.concurrency.max(1)).unwrap_or(u16::MAX);
    let ctx = Arc::new(LbCtx::new(shared, triggers.lb.clone()));
    Controller::new(api, watcher::Config::default())
        .with_config(kube::runtime::controller::Config::default().concurrency(concurrency))
        // Pool membership changed: re-sync every Service; reconcile() returns at once for
        // Services without a load balancer, so the rest cost one check each.
        .reconcile_all_on(changes(triggers.lb))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|res| async move {
            if let Err(err) = res {
                tracing::debug!(%err, "service reconcile error");
            }
        })
        .await;
}

fn error_policy(svc: Arc<Service>, err: &SyncError, ctx: Arc<LbCtx>) -> Requeue {
    let n = ctx.note_failure(&key(&svc));
    let delay = error_delay(&ctx.shared.tuning, n);
    tracing::warn!(service = %key(&svc), %err, failures = n, ?delay, "load balancer sync failed");
    Requeue::requeue(delay)
}

/// One span per reconcile carries the Service's key: every log line of the sync (rounds, GCE
/// calls, reports) names it without repeating it.
#[tracing::instrument(skip_all, fields(service = %key(&svc)))]
async fn reconcile(svc: Arc<Service>, ctx: Arc<LbCtx>) -> Result<Requeue, SyncError> {
    let step = next_step(&svc, ctx.shared.cfg.rbs_netlb.is_some());
    if step == Step::Ignore {
        return Ok(Requeue::await_change());
    }
    // Nodes must be listed before any membership decision.
    ctx.shared.wait_nodes_ready().await;
    if let Some(wait) = not_yet(&svc, &ctx, &step).await? {
        return Ok(Requeue::requeue(wait));
    }
    let result = take_step(&svc, &ctx, step).await;
    let metrics = &ctx.shared.gce.metrics;
    match &result {
        Ok(_) => {
            ctx.note_success(&key(&svc));
            metrics.sync("service", "ok");
        }
        Err(e) => {
            ctx.forget_synced(&svc);
            metrics.sync("service", e.metric_label());
        }
    }
    result
}

/// When a step is not taken now (no sync counted): the Service was synced with the same input
/// moments ago, it waits for its verification slot after a start, or (before its first
/// finalizer) a backend-service controller's forwarding rule has its name.
async fn not_yet(svc: &Service, ctx: &LbCtx, step: &Step) -> Result<Option<Duration>, SyncError> {
    Ok(match step {
        Step::LeaveExternal | Step::SyncInternal | Step::SyncRbs => ctx.recently_synced(svc),
        Step::SyncExternal => ctx.recently_synced(svc).or_else(|| ctx.verify_wait(svc)),
        Step::AddExternalFinalizers { fresh: true } => foreign_rule(svc, ctx)
            .await?
            .then_some(ctx.shared.tuning.lb_resync),
        _ => None,
    })
}

async fn take_step(svc: &Service, ctx: &LbCtx, step: Step) -> Result<Requeue, SyncError> {
    let api: Api<Service> = Api::namespaced(ctx.shared.client.clone(), &svc.namespace().unwrap_or_default());
    // The finalizer patch's watch event starts the next reconcile.
    let changed = |r: Result<(), SyncError>| r.map(|()| Requeue::await_change());
    match step {
        Step::Ignore => Ok(Requeue::await_change()),
        Step::DropFinalizers(reason) => {
            tracing::info!(reason, "not ours: removing our finalizers, no GCE call");
            changed(patch_finalizers(&api, svc, false).await)
        }
        Step::TearDown => {
            ctx.forget_queued(svc);
            cleanup_and_release(&api, svc, ctx).await
        }
        Step::SetInternalFinalizers(next) => changed(patch_list(&api, svc, next).await),
        Step::LeaveExternal => {
            cleanup(svc, ctx, true).await?;
            changed(drop_finalizer(&api, svc, NETLB_FINALIZER).await)
        }
        Step::LeaveInternal => {
            cleanup_ilb(svc, ctx, Teardown::InternalOnly).await?;
            changed(drop_finalizer(&api, svc, ILB_FINALIZER).await)
        }
        Step::AddExternalFinalizers { fresh } => {
            if fresh {
                ctx.mark_fresh(svc);
            }
            changed(patch_finalizers(&api, svc, true).await)
        }
        Step::SyncInternal => {
            let fp = ctx.input_fingerprint(svc);
            let r = ensure_ilb(svc, ctx).await;
            if r.is_ok() {
                ctx.note_synced(svc, fp);
            }
            r
        }
        Step::SyncExternal => {
            ctx.forget_queued(svc);
            let fp = ctx.input_fingerprint(svc);
            let r = ensure_lb(svc, ctx).await;
            if r.is_ok() {
                ctx.note_synced(svc, fp);
            }
            r
        }
        step => take_rbs_step(&api, svc, ctx, step).await,
    }
}

/// The steps into, of and out of a backend-service NetLB (`--rbs-netlb`).
async fn take_rbs_step(
    api: &Api<Service>,
    svc: &Service,
    ctx: &LbCtx,
    step: Step,
) -> Result<Requeue, SyncError> {
    let changed = |r: Result<(), SyncError>| r.map(|()| Requeue::await_change());
    let drop_both = |f: &'static str| finalizers_with(svc, &[], &[LB_CLEANUP_FINALIZER, f]);
    match step {
        Step::LeaveExternalForRbs => {
            cleanup(svc, ctx, true).await?;
            changed(patch_opt(api, svc, drop_both(NETLB_FINALIZER), None).await)
        }
        Step::LeaveInternalForRbs => {
            cleanup_ilb(svc, ctx, Teardown::InternalOnly).await?;
            changed(patch_opt(api, svc, drop_both(ILB_FINALIZER), None).await)
        }
        Step::SetRbsFinalizers(next) => changed(patch_list(api, svc, next).await),
        Step::SyncRbs => {
            let fp = ctx.input_fingerprint(svc);
            let r = ensure_rbs(svc, ctx).await;
            if r.is_ok() {
                ctx.note_synced(svc, fp);
            }
            r
        }
        Step::LeaveRbs => {
            cleanup_rbs(svc, ctx, true).await?;
            let next = finalizers_with(svc, &[], &[RBS_FINALIZER]);
            changed(patch_opt(api, svc, next, without_status_annotations(svc)).await)
        }
        _ => Ok(Requeue::await_change()),
    }
}

/// Whether the forwarding rule named like the Service's LB points at a backend service.
async fn foreign_rule(svc: &Service, ctx: &LbCtx) -> Result<bool, SyncError> {
    let sh = &ctx.shared;
    let names = match lb_names(svc, &sh.cfg) {
        Ok(n) => n,
        // Invalid Services are reported by the sync (Warning event), which needs the finalizers.
        Err(_) => return Ok(false),
    };
    let rule = forwarding_rule(&sh.gce, &sh.tuning.retry, &names.lb).await?;
    let foreign = forwarding_rule_is_foreign(rule.as_ref());
    if foreign {
        tracing::info!(
            "forwarding rule points at a backend service: another controller's load balancer, left alone"
        );
    }
    Ok(foreign)
}

/// Deletion, or the type changed away from LoadBalancer: tear down, then drop our finalizers
/// (upstream removes the netlb one at the end of ensureExternalLoadBalancerDeleted, the service
/// controller the cleanup one after it).
async fn cleanup_and_release(api: &Api<Service>, svc: &Service, ctx: &LbCtx) -> Result<Requeue, SyncError> {
    // Each kind's finalizer goes on before any object of that kind is made: without it there is none.
    let ilb = has_finalizer(svc, ILB_FINALIZER);
    let rbs = ctx.shared.cfg.rbs_netlb.is_some() && has_finalizer(svc, RBS_FINALIZER);
    if rbs {
        cleanup_rbs(svc, ctx, false).await?;
        // Another kind's finalizer stays for the next reconcile's teardown of that kind.
        let other_kind = ilb || has_finalizer(svc, NETLB_FINALIZER);
        let drop: &[&str] = if other_kind {
            &[RBS_FINALIZER]
        } else {
            &[RBS_FINALIZER, LB_CLEANUP_FINALIZER]
        };
        let next = finalizers_with(svc, &[], drop);
        patch_opt(api, svc, next, without_status_annotations(svc)).await?;
        // The finalizer patch's watch event brings what else is left, if anything.
        return Ok(Requeue::await_change());
    }
    if !ilb || has_finalizer(svc, NETLB_FINALIZER) {
        cleanup(svc, ctx, false).await?;
    }
    if ilb {
        cleanup_ilb(svc, ctx, Teardown::All).await?;
        if svc.metadata.deletion_timestamp.is_none() {
            patch_ingress(svc, &ctx.shared, None).await?;
        }
        record::delete(&ctx.shared.client, svc).await;
    }
    patch_finalizers(api, svc, false).await?;
    Ok(Requeue::await_change())
}

/// Removes one finalizer (after the LB it guards is gone).
async fn drop_finalizer(api: &Api<Service>, svc: &Service, name: &str) -> Result<(), SyncError> {
    match finalizers_with(svc, &[], &[name]) {
        Some(next) => patch_list(api, svc, next).await,
        None => Ok(()),
    }
}

/// Replaces the finalizer list. resourceVersion makes the merge patch conditional: a concurrent
/// change of the list gets a 409 and a retry instead of being overwritten.
async fn patch_list(api: &Api<Service>, svc: &Service, next: Vec<String>) -> Result<(), SyncError> {
    let patch = json!({ "metadata": {
        "finalizers": next,
        "resourceVersion": svc.resource_version(),
    }});
    api.patch(&svc.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Replaces the finalizer list (when `next`) and merges `annotations` into the Service's, in one
/// conditional patch; nothing when neither changes.
async fn patch_opt(
    api: &Api<Service>,
    svc: &Service,
    next: Option<Vec<String>>,
    annotations: Option<serde_json::Value>,
) -> Result<(), SyncError> {
    if next.is_none() && annotations.is_none() {
        return Ok(());
    }
    let mut meta = json!({ "resourceVersion": svc.resource_version() });
    if let Some(next) = next {
        meta["finalizers"] = json!(next);
    }
    if let Some(a) = annotations {
        meta["annotations"] = a;
    }
    api.patch(
        &svc.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&json!({ "metadata": meta })),
    )
    .await?;
    Ok(())
}

/// Adds (`add`) or removes both of our finalizers in one patch, leaving every other entry.
async fn patch_finalizers(api: &Api<Service>, svc: &Service, add: bool) -> Result<(), SyncError> {
    match finalizers_with_ours(svc, add) {
        Some(next) => patch_list(api, svc, next).await,
        None => Ok(()),
    }
}
