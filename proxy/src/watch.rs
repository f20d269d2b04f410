//! kube-runtime reflectors: Services and EndpointSlices (upstream's selector: not owned by another
//! proxy, not headless) and this node's Node object. Every event is recorded in the change tracker
//! and requests a sync; the daemon writes nothing before the Service and EndpointSlice caches have
//! completed their first list.
//!
//! Watch errors (API server gone, 410 after a restart) are retried with backoff by the watcher; the
//! caches keep their last content meanwhile, so rules stay as they are until the relist completes.

use std::fmt::Debug;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::changes::{Changes, object_key, trigger_time};
use crate::health::Health;
use crate::metrics::{Metrics, family_labels, unix_now};
use crate::model::Family;
use crate::runner::Trigger;

/// Upstream's label selector for the Service and EndpointSlice informers.
pub const PROXY_SELECTOR: &str = "!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless";

/// The caches the sync reads.
#[derive(Clone)]
pub struct Stores {
    pub services: Store<Service>,
    pub slices: Store<EndpointSlice>,
    pub node: Store<Node>,
}

/// Where watch events go.
#[derive(Clone)]
pub struct Sink {
    pub changes: Arc<Mutex<Changes>>,
    pub trigger: Trigger,
    pub health: Arc<Health>,
    pub metrics: Arc<Metrics>,
    pub families: Vec<Family>,
}

impl Sink {
    fn record(&self, f: impl FnOnce(&mut Changes)) {
        let (svc, eps) = {
            let mut c = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut c);
            c.pending()
        };
        self.metrics
            .service_changes_pending
            .set(i64::try_from(svc).unwrap_or(i64::MAX));
        self.metrics
            .endpoint_changes_pending
            .set(i64::try_from(eps).unwrap_or(i64::MAX));
        for f in &self.families {
            self.metrics
                .last_queued_timestamp
                .get_or_create(&family_labels(*f))
                .set(unix_now());
        }
        self.health.queued();
        self.trigger.request();
    }
}

/// What kind of object a watcher carries, for change bookkeeping.
trait Tracked: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static {
    fn changed(&self, sink: &Sink, deleted: bool);

    /// Drops what the proxy never reads before the object enters the cache (memory: managedFields,
    /// last-applied annotations and EndpointSlice targetRefs are most of a large cluster's objects).
    fn trim(&mut self);
}

/// `kubectl apply`'s copy of the whole object: often the largest annotation.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn trim_meta(meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) {
    meta.managed_fields = None;
    if let Some(a) = meta.annotations.as_mut() {
        a.remove(LAST_APPLIED);
    }
}

impl Tracked for Service {
    fn changed(&self, sink: &Sink, _deleted: bool) {
        sink.metrics.service_changes_total.inc();
        sink.record(|c| c.service_changed(object_key(&self.metadata)));
    }

    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        if let Some(spec) = self.spec.as_mut() {
            spec.selector = None; // the endpoint controller's business, not the proxy's
        }
    }
}

impl Tracked for EndpointSlice {
    fn changed(&self, sink: &Sink, _deleted: bool) {
        sink.metrics.endpoint_changes_total.inc();
        sink.record(|c| c.slice_changed(object_key(&self.metadata), trigger_time(self)));
    }

    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        for ep in &mut self.endpoints {
            ep.target_ref = None;
            ep.hostname = None;
            ep.deprecated_topology = None;
        }
    }
}

impl Tracked for Node {
    fn changed(&self, sink: &Sink, deleted: bool) {
        sink.health.set_node(if deleted { None } else { Some(self) });
        sink.record(Changes::other_changed);
    }

    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        if let Some(status) = self.status.as_mut() {
            status.images = None;
            status.volumes_attached = None;
            status.volumes_in_use = None;
        }
    }
}

fn spawn<K>(api: Api<K>, cfg: watcher::Config, sink: Sink, stop: CancellationToken) -> Store<K>
where
    K: Tracked,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let kind = K::kind(&K::DynamicType::default()).to_string();
    let stream = watcher::watcher(api, cfg)
        .default_backoff()
        .modify(K::trim)
        .reflect(writer);
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        loop {
            let next = tokio::select! {
                n = stream.next() => n,
                () = stop.cancelled() => break,
            };
            match next {
                Some(Ok(Event::Apply(o))) => o.changed(&sink, false),
                Some(Ok(Event::Delete(o))) => o.changed(&sink, true),
                // A (re)list finished: the cache was replaced atomically; objects deleted while the
                // watch was down are gone from it now, so resync.
                Some(Ok(Event::InitDone)) => {
                    tracing::debug!(kind, "list complete");
                    sink.record(Changes::other_changed);
                }
                Some(Ok(Event::Init | Event::InitApply(_))) => {}
                Some(Err(err)) => tracing::warn!(kind, %err, "watch failed, retrying"),
                None => break,
            }
        }
    });
    reader
}

/// Starts the three reflectors.
pub fn start(client: &Client, node_name: &str, sink: &Sink, stop: &CancellationToken) -> Stores {
    let sel = watcher::Config::default().labels(PROXY_SELECTOR);
    let services = spawn(
        Api::<Service>::all(client.clone()),
        sel.clone(),
        sink.clone(),
        stop.clone(),
    );
    let slices = spawn(
        Api::<EndpointSlice>::all(client.clone()),
        sel,
        sink.clone(),
        stop.clone(),
    );
    let node_cfg = watcher::Config::default().fields(&format!("metadata.name={node_name}"));
    let node = spawn(
        Api::<Node>::all(client.clone()),
        node_cfg,
        sink.clone(),
        stop.clone(),
    );
    Stores {
        services,
        slices,
        node,
    }
}

/// Waits for the first complete list of all three caches.
pub async fn wait_synced(stores: &Stores) -> Result<(), reflector::store::WriterDropped> {
    stores.services.wait_until_ready().await?;
    stores.slices.wait_until_ready().await?;
    stores.node.wait_until_ready().await
}

#[cfg(test)]
mod tests;
