//! What a load balancer sync tells Kubernetes besides finalizers: events on the Service, its
//! `status.loadBalancer.ingress`, and the CloudLoadBalancer record of a failure.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ObjectReference, Service};
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action as Requeue;
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};

use crate::controllers::lb::record;
use crate::controllers::lb::rounds::{Announce, Note};
use crate::controllers::{Shared, SyncError};
use crate::gce::observe::ObservedLb;
use crate::lb;
use crate::naming::LbNames;

pub(crate) fn obj_ref(svc: &Service) -> ObjectReference {
    svc.object_ref(&())
}

/// Normal events on one Service (the round loops announce their work through it).
pub(crate) struct ServiceEvents<'a> {
    pub sh: &'a Shared,
    pub oref: ObjectReference,
}

impl Announce for ServiceEvents<'_> {
    async fn event(&self, reason: &'static str, note: &'static str) {
        self.sh.event(&self.oref, false, reason, note.into()).await;
    }
}

/// Validation errors: Warning event, no GCE call; retried when the Service changes (and
/// periodically, in case nodes appear).
pub(crate) async fn invalid_service(svc: &Service, sh: &Shared, e: &crate::Error) -> Requeue {
    tracing::warn!(error = %e, label = e.metric_label(), "invalid load balancer Service");
    failure(svc, sh, None, None, &e.to_string()).await;
    Requeue::requeue(Duration::from_secs(300).min(sh.tuning.lb_resync))
}

/// A failed sync: Warning event and the error in the record (with what was observed, if any).
pub(crate) async fn sync_failed(
    svc: &Service,
    sh: &Shared,
    names: Option<&LbNames>,
    obs: Option<&ObservedLb>,
    e: SyncError,
) -> SyncError {
    failure(svc, sh, names, obs, &e.to_string()).await;
    e
}

/// Both failures' Warning event and record (the error beside what was observed, if anything).
async fn failure(svc: &Service, sh: &Shared, names: Option<&LbNames>, obs: Option<&ObservedLb>, e: &str) {
    let note = format!("Error syncing load balancer: {e}");
    sh.event(&obj_ref(svc), true, lb::EVENT_SYNC_FAILED, note).await;
    let prev = record::current(&sh.client, svc).await;
    let st = record::build_status(svc, prev.as_ref(), names, obs, None, Some(e));
    record::write(&sh.client, svc, st).await;
}

/// How a converged sync ends for the Service: its ingress IP (patched only when it changed), then
/// the closing event: `done` when the sync announced work, else Ensured when only the status
/// changed. Returns whether the status was written.
pub(crate) async fn converged(
    svc: &Service,
    sh: &Shared,
    ip: Option<&str>,
    done: Option<Note>,
) -> Result<bool, SyncError> {
    let ips: Vec<String> = ip.map(str::to_owned).into_iter().collect();
    converged_ips(svc, sh, &ips, done).await
}

/// [`converged`] for an LB with an ingress IP per family (`ips` in status order; none written
/// when empty).
pub(crate) async fn converged_ips(
    svc: &Service,
    sh: &Shared,
    ips: &[String],
    done: Option<Note>,
) -> Result<bool, SyncError> {
    let status_changed = if ips.is_empty() {
        false
    } else {
        patch_ingress_ips(svc, sh, ips).await?
    };
    let ensured = (lb::EVENT_ENSURED, "Ensured load balancer");
    if let Some((reason, note)) = done.or(status_changed.then_some(ensured)) {
        sh.event(&obj_ref(svc), false, reason, note.into()).await;
    }
    Ok(status_changed)
}

/// After a teardown that deleted something: the Deleted event.
pub(crate) async fn deleted(svc: &Service, sh: &Shared) {
    sh.event(
        &obj_ref(svc),
        false,
        lb::EVENT_DELETED,
        "Deleted load balancer".into(),
    )
    .await;
}

/// Sets (or clears) `status.loadBalancer.ingress`, only when it differs. Returns whether it wrote.
pub(crate) async fn patch_ingress(svc: &Service, sh: &Shared, ip: Option<&str>) -> Result<bool, SyncError> {
    let ips: Vec<String> = ip.map(str::to_owned).into_iter().collect();
    patch_ingress_ips(svc, sh, &ips).await
}

/// Sets `status.loadBalancer.ingress` to `ips` in order (cleared when empty), only when it differs.
async fn patch_ingress_ips(svc: &Service, sh: &Shared, ips: &[String]) -> Result<bool, SyncError> {
    let current: Vec<Option<String>> = svc
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .map(|i| i.iter().map(|i| i.ip.clone()).collect())
        .unwrap_or_default();
    let want: Vec<Option<String>> = ips.iter().cloned().map(Some).collect();
    if current == want {
        return Ok(false);
    }
    let ingress = if ips.is_empty() {
        serde_json::Value::Null
    } else {
        ips.iter().map(|ip| json!({ "ip": ip })).collect()
    };
    let body = json!({ "status": { "loadBalancer": { "ingress": ingress } } });
    let api: Api<Service> = Api::namespaced(sh.client.clone(), &svc.namespace().unwrap_or_default());
    api.patch_status(&svc.name_any(), &PatchParams::default(), &Patch::Merge(&body))
        .await?;
    Ok(true)
}

/// Sets the status annotations to `want` (key -> value, None = absent) and removes every other
/// key of `keys` (the kind's share of ingress-gce's set); only when something differs.
pub(crate) async fn patch_annotations(
    svc: &Service,
    sh: &Shared,
    keys: &[&str],
    want: &BTreeMap<&'static str, Option<String>>,
) -> Result<(), SyncError> {
    let current = svc.metadata.annotations.clone().unwrap_or_default();
    let mut changes = serde_json::Map::new();
    for &key in keys {
        let wanted = want.get(key).cloned().flatten();
        if current.get(key) != wanted.as_ref() {
            changes.insert(key.to_owned(), wanted.map_or(Value::Null, Value::String));
        }
    }
    if changes.is_empty() {
        return Ok(());
    }
    let api: Api<Service> = Api::namespaced(sh.client.clone(), &svc.namespace().unwrap_or_default());
    let body = json!({ "metadata": { "annotations": changes } });
    api.patch(&svc.name_any(), &PatchParams::default(), &Patch::Merge(&body))
        .await?;
    Ok(())
}
