//! Service load balancer controller: a kube-runtime `Controller` over Services. Services of type
//! LoadBalancer get our finalizers and an external target-pool load balancer, or an internal one
//! (`service_ilb`) when annotated Internal; switching kinds tears the old one down first; deleting the Service (or changing its type) tears it down and
//! removes the finalizer. Node membership changes re-reconcile every Service.
//!
//! Per sync: observe GCE -> `lb::ensure::ensure` -> execute actions in order -> observe again
//! until the plan is empty (a new LB needs two rounds: the reserved IP first). A no-op sync only
//! reads. Events follow upstream's service controller. Which Services are ours, and the two
//! finalizers (`load-balancer-cleanup`, upstream's `l4-netlb-v1`): `lb::ownership`. After a start,
//! converged load balancers are re-verified behind new and changed ones (`verify_queue`).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ObjectReference, Service};
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action as Requeue, Controller};
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use tokio::sync::Mutex as AsyncMutex;

use crate::controllers::node_watch::{NodeTriggers, changes};
use crate::controllers::verify_queue::VerifyQueue;
use crate::controllers::{Shared, SyncError, error_delay, lb_record};
use crate::gce::exec::{Outcome, execute};
use crate::gce::observe::{ObservedLb, Touched, forwarding_rule, observe_lb, observe_lb_again};
use crate::lb::ensure::{EnsurePlan, ensure, lb_names};
use crate::lb::internal::Teardown;
use crate::lb::ownership::{
    ILB_FINALIZER, NETLB_FINALIZER, OUR_ILB_FINALIZERS, finalizers_with, forwarding_rule_is_foreign,
    has_any_of_ours, has_finalizer,
};
use crate::lb::stages::stages;
use crate::lb::{self, Role, delete::plan_delete};
use crate::naming::LbNames;
use crate::objects::action::Action;

/// Rounds of observe -> plan -> execute before a sync counts as not converging.
const MAX_ROUNDS: usize = 5;

pub struct LbCtx {
    pub shared: Arc<Shared>,
    /// Upstream's sharedResourceLock: plans that create or delete the shared node health check
    /// (or its firewall) run one at a time, re-observed under the lock.
    shared_hc: AsyncMutex<()>,
    failures: Mutex<HashMap<String, u32>>,
    /// The node-membership fingerprint the node watch publishes (part of a sync's input).
    nodes: tokio::sync::watch::Receiver<String>,
    /// Per Service: fingerprint of the input of its last successful sync, and when it ended.
    synced: Mutex<HashMap<String, (u64, Instant)>>,
    /// UIDs of Services this process just gave the cleanup finalizer (see [`LbCtx::take_fresh`]).
    fresh: Mutex<std::collections::HashSet<String>>,
    /// The shared node health check and its firewall as a sync last read them, and when: fresh
    /// Services starting within [`SHARED_SEEN_TTL`] take them from here instead of GETting them.
    shared_seen: Mutex<Option<(Instant, ObservedLb)>>,
    /// Converged-looking Services waiting for their re-verification slot after a start.
    verify: Mutex<VerifyQueue>,
}

/// How long a read of the shared node health check and firewall stands in for another one. Only
/// this controller creates or deletes them, under `shared_hc`, which clears the cache; were one
/// deleted behind its back, a pool insert referencing it fails and the retry reads it again.
const SHARED_SEEN_TTL: Duration = Duration::from_secs(5);

impl LbCtx {
    pub fn new(shared: Arc<Shared>, nodes: tokio::sync::watch::Receiver<String>) -> Self {
        LbCtx {
            shared_hc: AsyncMutex::new(()),
            failures: Mutex::new(HashMap::new()),
            nodes,
            synced: Mutex::new(HashMap::new()),
            fresh: Mutex::new(std::collections::HashSet::new()),
            shared_seen: Mutex::new(None),
            verify: Mutex::new(VerifyQueue::new(shared.tuning.verify_interval)),
            shared,
        }
    }

    /// How long a Service that looks converged and was not synced by this process yet waits for
    /// its verification (see `verify_queue`); None = sync now.
    fn verify_wait(&self, svc: &Service) -> Option<Duration> {
        let k = key(svc);
        let synced_here = self
            .synced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(&k);
        if synced_here || !looks_converged(svc) {
            return None;
        }
        let version = svc.metadata.resource_version.clone().unwrap_or_default();
        self.verify
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .wait(&k, &version, Instant::now())
    }

    /// The shared objects of a recent read, as an observation holding only them.
    fn recent_shared(&self) -> Option<ObservedLb> {
        let seen = self.shared_seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.as_ref()
            .filter(|(at, _)| at.elapsed() < SHARED_SEEN_TTL)
            .map(|(_, o)| o.clone())
    }

    /// Remembers the shared objects of `obs` (just read from GCE), or forgets them (None: about to
    /// change them).
    fn saw_shared(&self, obs: Option<(&ObservedLb, &LbNames)>) {
        let entry = obs.map(|(o, names)| {
            let mut only = ObservedLb::default();
            only.observed.nodes_health_check = o.observed.nodes_health_check.clone();
            only.observed.nodes_health_check_firewall = o.observed.nodes_health_check_firewall.clone();
            for key in [
                format!("httpHealthChecks/{}", names.nodes_health_check),
                format!("firewalls/{}", names.nodes_health_check_firewall),
            ] {
                if let Some(link) = o.self_links.get(&key) {
                    only.self_links.insert(key, link.clone());
                }
            }
            (Instant::now(), only)
        });
        *self.shared_seen.lock().unwrap_or_else(|p| p.into_inner()) = entry;
    }

    /// Upstream's sharedResourceLock (see the field).
    pub(crate) async fn shared_lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.shared_hc.lock().await
    }

    fn mark_fresh(&self, svc: &Service) {
        if let Some(uid) = &svc.metadata.uid {
            self.fresh
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(uid.clone());
        }
    }

    /// Whether `svc` got the cleanup finalizer from this process and has not been synced since.
    /// Such a Service owns no GCE object yet: the finalizer goes on before the first GCE call and
    /// comes off only after the last object is deleted. Its first sync then reads only the shared
    /// node health check and firewall instead of GETting 8 objects that answer 404. Should the
    /// invariant be broken (someone removed the finalizer by hand), inserts answer 409, which
    /// counts as done, and the next round GETs what they touched: the sync still converges.
    fn take_fresh(&self, svc: &Service) -> bool {
        svc.metadata
            .uid
            .as_ref()
            .is_some_and(|uid| self.fresh.lock().unwrap_or_else(|p| p.into_inner()).remove(uid))
    }

    /// What a sync of `svc` depends on: everything of the Service but its status (and the
    /// bookkeeping fields that change with every write), plus the node membership.
    fn input_fingerprint(&self, svc: &Service) -> u64 {
        let m = &svc.metadata;
        let input = json!({
            "uid": m.uid, "labels": m.labels, "annotations": m.annotations,
            "finalizers": m.finalizers, "deletion": m.deletion_timestamp,
            "spec": svc.spec, "nodes": *self.nodes.borrow(),
        });
        let mut h = std::collections::hash_map::DefaultHasher::new();
        input.to_string().hash(&mut h);
        h.finish()
    }

    /// Time until the periodic resync when `svc` was synced successfully with the same input less
    /// than half a resync period ago: the event is our own status (or record) write, or a
    /// status-only change, which cannot change the load balancer. Upstream's service controller
    /// skips those too (`needsUpdate`). Every other event, and the periodic resync (drift repair),
    /// syncs for real.
    fn recently_synced(&self, svc: &Service) -> Option<Duration> {
        let period = self.shared.tuning.lb_resync;
        let synced = self.synced.lock().unwrap_or_else(|p| p.into_inner());
        let (fp, at) = synced.get(&key(svc))?;
        let age = at.elapsed();
        (*fp == self.input_fingerprint(svc) && age < period / 2).then(|| period.saturating_sub(age))
    }

    /// Records a successful sync of the input fingerprinted *before* it started: a node change that
    /// lands while the sync runs must not be taken as already handled (the sync may have read the
    /// node list before it).
    fn note_synced(&self, svc: &Service, fp: u64) {
        self.synced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key(svc), (fp, Instant::now()));
    }

    fn forget_queued(&self, svc: &Service) {
        self.verify
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .forget(&key(svc));
    }

    fn forget_synced(&self, svc: &Service) {
        self.synced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key(svc));
    }

    fn note_failure(&self, key: &str) -> u32 {
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let n = f.entry(key.to_owned()).or_insert(0);
        *n += 1;
        *n
    }

    fn note_success(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }
}

/// Both finalizers, an ingress IP, not being deleted: what a load balancer the previous leader
/// had finished looks like from the Service alone.
fn looks_converged(svc: &Service) -> bool {
    let has_ip = svc
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .is_some_and(|i| i.iter().any(|i| i.ip.as_deref().is_some_and(|ip| !ip.is_empty())));
    has_ip
        && svc.metadata.deletion_timestamp.is_none()
        && lb::ownership::finalizers_with_ours(svc, true).is_none()
}

pub(crate) fn key(svc: &Service) -> String {
    format!("{}/{}", svc.namespace().unwrap_or_default(), svc.name_any())
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    shared: Arc<Shared>,
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

pub async fn reconcile(svc: Arc<Service>, ctx: Arc<LbCtx>) -> Result<Requeue, SyncError> {
    let role = lb::role(&svc);
    let deleting = svc.metadata.deletion_timestamp.is_some();
    let ours = has_any_of_ours(&svc);
    if !ours && (!matches!(role, Role::Ours | Role::Internal) || deleting) {
        return Ok(Requeue::await_change());
    }
    // Nodes must be listed before any membership decision.
    ctx.shared.wait_nodes_ready().await;
    let api: Api<Service> = Api::namespaced(ctx.shared.client.clone(), &svc.namespace().unwrap_or_default());
    let k = key(&svc);
    let result = match role {
        Role::Foreign(reason) => {
            // Upstream's ImplementedElsewhere: the service controller drops its finalizer and the
            // GCE objects stay with the controller that owns them.
            tracing::info!(service = %k, reason, "not ours: removing our finalizers, no GCE call");
            patch_finalizers(&api, &svc, false)
                .await
                .map(|_| Requeue::await_change())
        }
        Role::NotLoadBalancer => {
            ctx.forget_queued(&svc);
            cleanup_and_release(&api, &svc, &ctx).await
        }
        Role::Ours | Role::Internal if deleting => {
            ctx.forget_queued(&svc);
            cleanup_and_release(&api, &svc, &ctx).await
        }
        Role::Internal => {
            if let Some(next) = finalizers_with(&svc, &OUR_ILB_FINALIZERS, &[]) {
                // Both go on before the first GCE object is made; the update's event syncs.
                patch_list(&api, &svc, next)
                    .await
                    .map(|_| Requeue::await_change())
            } else if let Some(next) = ctx.recently_synced(&svc) {
                return Ok(Requeue::requeue(next));
            } else if has_finalizer(&svc, NETLB_FINALIZER) {
                // Was external: its load balancer goes first (upstream deletes the other
                // scheme's objects before ensuring), then its finalizer.
                match cleanup(&svc, &ctx, true).await {
                    Ok(()) => match finalizers_with(&svc, &[], &[NETLB_FINALIZER]) {
                        Some(next) => patch_list(&api, &svc, next)
                            .await
                            .map(|_| Requeue::await_change()),
                        None => Ok(Requeue::await_change()),
                    },
                    Err(e) => Err(e),
                }
            } else {
                let fp = ctx.input_fingerprint(&svc);
                let r = crate::controllers::service_ilb::ensure_ilb(&svc, &ctx).await;
                if r.is_ok() {
                    ctx.note_synced(&svc, fp);
                }
                r
            }
        }
        Role::Ours if has_finalizer(&svc, ILB_FINALIZER) => {
            // Was internal: tear that down first, then drop its finalizer (the event re-syncs).
            match crate::controllers::service_ilb::cleanup_ilb(&svc, &ctx, Teardown::InternalOnly).await {
                Ok(()) => match finalizers_with(&svc, &[], &[ILB_FINALIZER]) {
                    Some(next) => patch_list(&api, &svc, next)
                        .await
                        .map(|_| Requeue::await_change()),
                    None => Ok(Requeue::await_change()),
                },
                Err(e) => Err(e),
            }
        }
        Role::Ours => {
            if lb::ownership::finalizers_with_ours(&svc, true).is_some() {
                // Both finalizers go on before the first GCE object is made; the update's watch
                // event starts the sync. A Service that had neither owns no GCE object yet, but a
                // forwarding rule of its name may be a backend-service controller's (upstream reads
                // it before adding its finalizer): then it gets none. One that carries upstream's
                // netlb finalizer alone may own objects (it is adopted), so it is not fresh.
                if !ours {
                    match foreign_rule(&svc, &ctx).await {
                        Ok(true) => return Ok(Requeue::requeue(ctx.shared.tuning.lb_resync)),
                        Ok(false) => ctx.mark_fresh(&svc),
                        Err(e) => return Err(e),
                    }
                }
                patch_finalizers(&api, &svc, true)
                    .await
                    .map(|_| Requeue::await_change())
            } else if let Some(next) = ctx.recently_synced(&svc) {
                return Ok(Requeue::requeue(next));
            } else if let Some(wait) = ctx.verify_wait(&svc) {
                return Ok(Requeue::requeue(wait));
            } else {
                ctx.forget_queued(&svc);
                let fp = ctx.input_fingerprint(&svc);
                let r = ensure_lb(&svc, &ctx).await;
                if r.is_ok() {
                    ctx.note_synced(&svc, fp);
                }
                r
            }
        }
    };
    let metrics = &ctx.shared.gce.metrics;
    match &result {
        Ok(_) => {
            ctx.note_success(&k);
            metrics.sync("service", "ok");
        }
        Err(e) => {
            ctx.forget_synced(&svc);
            metrics.sync("service", e.metric_label());
        }
    }
    result
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
        tracing::info!(service = %key(svc), "forwarding rule points at a backend service: another controller's load balancer, left alone");
    }
    Ok(foreign)
}

/// Deletion, or the type changed away from LoadBalancer: tear down, then drop our finalizers
/// (upstream removes the netlb one at the end of ensureExternalLoadBalancerDeleted, the service
/// controller the cleanup one after it).
async fn cleanup_and_release(api: &Api<Service>, svc: &Service, ctx: &LbCtx) -> Result<Requeue, SyncError> {
    // The ILB finalizer goes on before any internal object is made: without it there is none.
    let ilb = has_finalizer(svc, ILB_FINALIZER);
    if !ilb || has_finalizer(svc, NETLB_FINALIZER) {
        cleanup(svc, ctx, false).await?;
    }
    if ilb {
        crate::controllers::service_ilb::cleanup_ilb(svc, ctx, Teardown::All).await?;
        if svc.metadata.deletion_timestamp.is_none() {
            patch_ingress(svc, &ctx.shared, None).await?;
        }
        lb_record::delete(&ctx.shared.client, svc).await;
    }
    patch_finalizers(api, svc, false).await?;
    Ok(Requeue::await_change())
}

/// Replaces the finalizer list (conditional on the resourceVersion read).
async fn patch_list(api: &Api<Service>, svc: &Service, next: Vec<String>) -> Result<(), SyncError> {
    let patch = json!({ "metadata": {
        "finalizers": next,
        "resourceVersion": svc.resource_version(),
    }});
    api.patch(&svc.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Adds (`add`) or removes both of our finalizers in one patch, leaving every other entry.
async fn patch_finalizers(api: &Api<Service>, svc: &Service, add: bool) -> Result<(), SyncError> {
    let Some(next) = lb::ownership::finalizers_with_ours(svc, add) else {
        return Ok(());
    };
    // resourceVersion makes the merge patch conditional: a concurrent change of the list gets a
    // 409 and a retry instead of being overwritten.
    let patch = json!({ "metadata": {
        "finalizers": next,
        "resourceVersion": svc.resource_version(),
    }});
    api.patch(&svc.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

pub(crate) fn obj_ref(svc: &Service) -> ObjectReference {
    svc.object_ref(&())
}

/// Whether executing `actions` creates or deletes the shared node health check or its firewall.
fn touches_shared(actions: &[Action], names: &LbNames) -> bool {
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

async fn ensure_lb(svc: &Service, ctx: &LbCtx) -> Result<Requeue, SyncError> {
    let sh = &ctx.shared;
    let oref = obj_ref(svc);
    let names = match lb_names(svc, &sh.cfg) {
        Ok(n) => n,
        Err(e) => return Ok(invalid_service(svc, ctx, &e).await),
    };
    let want_ip = svc
        .spec
        .as_ref()
        .and_then(|s| s.load_balancer_ip.clone())
        .filter(|ip| !ip.is_empty());
    let mut guard = None;
    let mut announced: Option<bool> = None; // Some(membership_only) once work started
    let mut done: Option<(EnsurePlan, ObservedLb)> = None;
    let shared_hc_key = format!("httpHealthChecks/{}", names.nodes_health_check);
    let shared_keys = || -> Touched {
        [
            format!("httpHealthChecks/{}", names.nodes_health_check),
            format!("firewalls/{}", names.nodes_health_check_firewall),
        ]
        .into()
    };
    // The previous round's observation and what its actions touched: the next round GETs only
    // those. A fresh Service starts from "nothing of ours exists" (see `LbCtx::take_fresh`; its
    // forwarding rule was read before the finalizers went on).
    let mut last: Option<(ObservedLb, Touched)> = if ctx.take_fresh(svc) {
        Some(match ctx.recent_shared() {
            Some(shared) => (shared, Touched::new()),
            None => (ObservedLb::default(), shared_keys()),
        })
    } else {
        None
    };
    // GCE kept the shared node health check on our delete (another pool uses it): see `lb::delete`.
    let mut shared_kept = false;
    for _ in 0..MAX_ROUNDS {
        let nodes = sh.node_list();
        // Whether this round GETs the shared objects (then a fresh read to remember).
        let reads_shared = last.as_ref().is_none_or(|(_, t)| t.contains(&shared_hc_key));
        let reuse = last.as_ref().map(|(o, t)| (o, t));
        let mut obs =
            match observe_lb_again(&sh.gce, &sh.tuning.retry, &names, want_ip.as_deref(), reuse).await {
                Ok(o) => o,
                Err(e) => return Err(sync_failed(svc, ctx, Some(&names), None, e.into()).await),
            };
        obs.observed.nodes_health_check_used_elsewhere = shared_kept;
        if reads_shared && guard.is_none() {
            ctx.saw_shared(Some((&obs, &names)));
        }
        let plan = match ensure(svc, &nodes, &sh.cfg, &obs.observed) {
            Ok(p) => p,
            Err(e) => return Ok(invalid_service(svc, ctx, &e).await),
        };
        if plan.implemented_elsewhere {
            tracing::info!(service = %key(svc), "forwarding rule points at a backend service: another controller's load balancer, left alone");
            return Ok(Requeue::await_change());
        }
        if plan.actions.is_empty() && !plan.replan {
            done = Some((plan, obs));
            break;
        }
        if touches_shared(&plan.actions, &names) {
            if guard.is_none() {
                guard = Some(ctx.shared_hc.lock().await);
                ctx.saw_shared(None); // about to create or delete them
                // Under the lock, GET the shared objects again (another LB may have created or
                // deleted them meanwhile); our own objects are as just observed.
                last = Some((obs, shared_keys()));
                continue;
            }
        } else {
            // Held only while our plan creates or deletes the shared objects: LBs that all found
            // the shared check missing at once queue here, and each of them, re-observing under
            // the lock, finds it created by the first and goes on in parallel. (Keeping the lock
            // for the rest of the sync serialised every such LB behind the previous one.)
            guard = None;
        }
        if announced.is_none() {
            let membership_only = plan.only_membership_changes();
            if !membership_only {
                sh.event(&oref, false, lb::EVENT_ENSURING, "Ensuring load balancer".into())
                    .await;
            }
            announced = Some(membership_only);
        }
        if !plan.skipped_nodes.is_empty() {
            tracing::info!(service = %key(svc), nodes = ?plan.skipped_nodes, "nodes without providerID are not in the pool yet");
        }
        match execute_plan(sh, svc, &plan.actions).await {
            Ok(PlanEnd::Complete) => {}
            Ok(PlanEnd::SharedKept) => shared_kept = true,
            Err(e) => return Err(sync_failed(svc, ctx, Some(&names), Some(&obs), e.into()).await),
        }
        last = Some((obs, plan.actions.iter().map(Action::target_key).collect()));
    }
    drop(guard);
    let Some((plan, obs)) = done else {
        let e = SyncError::NotConverged(format!(
            "load balancer {} did not converge in {MAX_ROUNDS} rounds",
            names.lb
        ));
        return Err(sync_failed(svc, ctx, Some(&names), None, e).await);
    };
    let ip = plan.ingress_ip.clone();
    let status_changed = match &ip {
        Some(ip) => patch_ingress(svc, sh, Some(ip)).await?,
        None => false,
    };
    match announced {
        Some(true) => {
            sh.event(
                &oref,
                false,
                lb::EVENT_UPDATED,
                "Updated load balancer with new hosts".into(),
            )
            .await
        }
        Some(false) => {
            sh.event(&oref, false, lb::EVENT_ENSURED, "Ensured load balancer".into())
                .await
        }
        None if status_changed => {
            sh.event(&oref, false, lb::EVENT_ENSURED, "Ensured load balancer".into())
                .await
        }
        None => {}
    }
    let prev = lb_record::current(&sh.client, svc).await;
    let st = lb_record::build_status(svc, prev.as_ref(), Some(&names), Some(&obs), ip.as_deref(), None);
    lb_record::write(&sh.client, svc, st).await;
    Ok(Requeue::requeue(sh.tuning.lb_resync))
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
async fn execute_plan(
    sh: &Shared,
    svc: &Service,
    actions: &[Action],
) -> Result<PlanEnd, crate::gce::error::GceError> {
    for stage in stages(actions) {
        let calls = stage.iter().map(|action| {
            tracing::debug!(service = %key(svc), action = action.label(), target = action.target_name(), "executing");
            execute(&sh.gce, &sh.tuning.retry, action)
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

/// Validation errors: Warning event, no GCE call; retried when the Service changes (and
/// periodically, in case nodes appear).
pub(crate) async fn invalid_service(svc: &Service, ctx: &LbCtx, e: &crate::Error) -> Requeue {
    let sh = &ctx.shared;
    tracing::warn!(service = %key(svc), error = %e, label = e.metric_label(), "invalid load balancer Service");
    sh.event(
        &obj_ref(svc),
        true,
        lb::EVENT_SYNC_FAILED,
        format!("Error syncing load balancer: {e}"),
    )
    .await;
    let prev = lb_record::current(&sh.client, svc).await;
    let st = lb_record::build_status(svc, prev.as_ref(), None, None, None, Some(&e.to_string()));
    lb_record::write(&sh.client, svc, st).await;
    Requeue::requeue(Duration::from_secs(300).min(sh.tuning.lb_resync))
}

pub(crate) async fn sync_failed_plain(svc: &Service, ctx: &LbCtx, e: SyncError) -> SyncError {
    sync_failed(svc, ctx, None, None, e).await
}

async fn sync_failed(
    svc: &Service,
    ctx: &LbCtx,
    names: Option<&LbNames>,
    obs: Option<&ObservedLb>,
    e: SyncError,
) -> SyncError {
    let sh = &ctx.shared;
    sh.event(
        &obj_ref(svc),
        true,
        lb::EVENT_SYNC_FAILED,
        format!("Error syncing load balancer: {e}"),
    )
    .await;
    let prev = lb_record::current(&sh.client, svc).await;
    let st = lb_record::build_status(svc, prev.as_ref(), names, obs, None, Some(&e.to_string()));
    lb_record::write(&sh.client, svc, st).await;
    e
}

/// Sets (or clears) `status.loadBalancer.ingress`, only when it differs. Returns whether it wrote.
pub(crate) async fn patch_ingress(svc: &Service, sh: &Shared, ip: Option<&str>) -> Result<bool, SyncError> {
    let current: Vec<Option<String>> = svc
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .map(|i| i.iter().map(|i| i.ip.clone()).collect())
        .unwrap_or_default();
    let want: Vec<Option<String>> = ip.map(|ip| vec![Some(ip.to_owned())]).unwrap_or_default();
    if current == want {
        return Ok(false);
    }
    let body = match ip {
        Some(ip) => json!({ "status": { "loadBalancer": { "ingress": [{ "ip": ip }] } } }),
        None => json!({ "status": { "loadBalancer": { "ingress": null } } }),
    };
    let api: Api<Service> = Api::namespaced(sh.client.clone(), &svc.namespace().unwrap_or_default());
    api.patch_status(&svc.name_any(), &PatchParams::default(), &Patch::Merge(&body))
        .await?;
    Ok(true)
}

/// Tears the load balancer down; Ok once nothing of it is left in GCE. `switching`: the Service
/// turned internal; a forwarding rule or address of the internal kind (same names) is left to
/// it, and status and record stay for the internal LB.
async fn cleanup(svc: &Service, ctx: &LbCtx, switching: bool) -> Result<(), SyncError> {
    let sh = &ctx.shared;
    let oref = obj_ref(svc);
    // Names come from the UID alone: a Service whose spec became invalid (bad annotation, no
    // ports) must still get its load balancer removed.
    let uid = svc.metadata.uid.clone().unwrap_or_default();
    let object = crate::lb::spec::service_object(svc);
    let names = match crate::naming::LbNames::new(&uid, &sh.cfg.cluster_id, &object) {
        Ok(n) => n,
        Err(e) => {
            // No valid name can be derived (e.g. no uid): nothing of ours can exist under it.
            tracing::warn!(service = %key(svc), error = %e, "cannot derive load balancer names; nothing to delete");
            return Ok(());
        }
    };
    ctx.take_fresh(svc);
    let mut announced = false;
    let mut converged = false;
    // GCE kept the shared node health check (another pool uses it): keep it and its firewall.
    let mut shared_kept = false;
    for _ in 0..MAX_ROUNDS {
        let _guard = ctx.shared_hc.lock().await;
        ctx.saw_shared(None); // this LB's delete may take the shared objects with it
        let mut obs = match observe_lb(&sh.gce, &sh.tuning.retry, &names, None).await {
            Ok(o) => o,
            Err(e) => return Err(sync_failed(svc, ctx, Some(&names), None, e.into()).await),
        };
        obs.observed.nodes_health_check_used_elsewhere = shared_kept;
        if switching {
            let internal = crate::lb::internal::SCHEME_INTERNAL;
            if obs
                .observed
                .forwarding_rule
                .as_ref()
                .is_some_and(|f| f.load_balancing_scheme == internal)
            {
                obs.observed.forwarding_rule = None;
            }
            if obs
                .observed
                .address
                .as_ref()
                .is_some_and(|a| a.address_type == internal)
            {
                obs.observed.address = None;
            }
        }
        if forwarding_rule_is_foreign(obs.observed.forwarding_rule.as_ref()) {
            tracing::info!(service = %key(svc), "forwarding rule points at a backend service: nothing deleted");
        }
        let actions = plan_delete(&names, &obs.observed);
        if actions.is_empty() {
            converged = true;
            break;
        }
        if !announced {
            sh.event(&oref, false, lb::EVENT_DELETING, "Deleting load balancer".into())
                .await;
            announced = true;
        }
        match execute_plan(sh, svc, &actions).await {
            Ok(PlanEnd::Complete) => {}
            Ok(PlanEnd::SharedKept) => shared_kept = true,
            Err(e) => return Err(sync_failed(svc, ctx, Some(&names), Some(&obs), e.into()).await),
        }
    }
    if !converged {
        let e = SyncError::NotConverged(format!("load balancer {} not fully deleted", names.lb));
        return Err(sync_failed(svc, ctx, Some(&names), None, e).await);
    }
    if !switching && svc.metadata.deletion_timestamp.is_none() {
        patch_ingress(svc, sh, None).await?;
    }
    if announced {
        sh.event(&oref, false, lb::EVENT_DELETED, "Deleted load balancer".into())
            .await;
    }
    if !switching {
        lb_record::delete(&sh.client, svc).await;
    }
    Ok(())
}
