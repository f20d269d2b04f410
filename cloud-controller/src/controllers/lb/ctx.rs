//! What the service controller remembers between syncs: per-Service sync fingerprints (events
//! that change nothing skip the sync), the Services it just gave a finalizer, failure counts for
//! backoff, the re-verification queue after a start, and the shared-health-check lock.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use serde_json::json;

use crate::controllers::lb::shared_hc::SharedHc;
use crate::controllers::lb::verify_queue::VerifyQueue;
use crate::controllers::{Shared, key};
use crate::lb;

pub(crate) struct LbCtx {
    pub(crate) shared: Arc<Shared>,
    /// Upstream's sharedResourceLock and the last read of the shared objects.
    pub(crate) shared_hc: SharedHc,
    failures: Mutex<HashMap<String, u32>>,
    /// The node-membership fingerprint the node watch publishes (part of a sync's input).
    nodes: tokio::sync::watch::Receiver<String>,
    /// Per Service: fingerprint of the input of its last successful sync, and when it ended.
    synced: Mutex<HashMap<String, (u64, Instant)>>,
    /// UIDs of Services this process just gave the cleanup finalizer (see [`LbCtx::take_fresh`]).
    fresh: Mutex<HashSet<String>>,
    /// Converged-looking Services waiting for their re-verification slot after a start.
    verify: Mutex<VerifyQueue>,
}

impl LbCtx {
    pub(crate) fn new(shared: Arc<Shared>, nodes: tokio::sync::watch::Receiver<String>) -> Self {
        LbCtx {
            shared_hc: SharedHc::default(),
            failures: Mutex::new(HashMap::new()),
            nodes,
            synced: Mutex::new(HashMap::new()),
            fresh: Mutex::new(HashSet::new()),
            verify: Mutex::new(VerifyQueue::new(shared.tuning.verify_interval)),
            shared,
        }
    }

    /// How long a Service that looks converged and was not synced by this process yet waits for
    /// its verification (see `verify_queue`); None = sync now.
    pub(crate) fn verify_wait(&self, svc: &Service) -> Option<Duration> {
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

    pub(crate) fn mark_fresh(&self, svc: &Service) {
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
    pub(crate) fn take_fresh(&self, svc: &Service) -> bool {
        svc.metadata
            .uid
            .as_ref()
            .is_some_and(|uid| self.fresh.lock().unwrap_or_else(|p| p.into_inner()).remove(uid))
    }

    /// What a sync of `svc` depends on: everything of the Service but its status (and the
    /// bookkeeping fields that change with every write, and the RBS status annotations, which a
    /// sync writes), plus the node membership.
    pub(crate) fn input_fingerprint(&self, svc: &Service) -> u64 {
        let m = &svc.metadata;
        let mut annotations = m.annotations.clone();
        if let Some(a) = annotations.as_mut() {
            a.retain(|k, _| !lb::rbs::STATUS_ANNOTATION_KEYS.contains(&k.as_str()));
        }
        let input = json!({
            "uid": m.uid, "labels": m.labels, "annotations": annotations,
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
    pub(crate) fn recently_synced(&self, svc: &Service) -> Option<Duration> {
        let period = self.shared.tuning.lb_resync;
        let synced = self.synced.lock().unwrap_or_else(|p| p.into_inner());
        let (fp, at) = synced.get(&key(svc))?;
        let age = at.elapsed();
        (*fp == self.input_fingerprint(svc) && age < period / 2).then(|| period.saturating_sub(age))
    }

    /// Records a successful sync of the input fingerprinted *before* it started: a node change that
    /// lands while the sync runs must not be taken as already handled (the sync may have read the
    /// node list before it).
    pub(crate) fn note_synced(&self, svc: &Service, fp: u64) {
        self.synced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key(svc), (fp, Instant::now()));
    }

    pub(crate) fn forget_queued(&self, svc: &Service) {
        self.verify
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .forget(&key(svc));
    }

    pub(crate) fn forget_synced(&self, svc: &Service) {
        self.synced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key(svc));
    }

    pub(crate) fn note_failure(&self, key: &str) -> u32 {
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let n = f.entry(key.to_owned()).or_insert(0);
        *n += 1;
        *n
    }

    pub(crate) fn note_success(&self, key: &str) {
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
