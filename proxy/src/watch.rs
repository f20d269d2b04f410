//! kube-runtime reflectors: Services and EndpointSlices (upstream's selector: not owned by another
//! proxy, not headless), this node's Node object and, in nftables mode, the ServiceCIDRs. Services
//! and EndpointSlices are converted to records ([`crate::model::record`]) as their events arrive,
//! before the reflector stores them, so the stores never hold the API objects. Every event is
//! recorded in the change tracker and requests a sync; the daemon writes nothing before the Service
//! and EndpointSlice caches have completed their first list.
//!
//! Watch errors (API server gone, 410 after a restart) are retried with backoff by the watcher; the
//! caches keep their last content meanwhile, so rules stay as they are until the relist completes.

use std::fmt::Debug;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::ServiceCIDR;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::health::Health;
use crate::metrics::{Metrics, family_labels, unix_now};
use crate::model::{Interner, ModelError, ServiceRecord, SliceRecord, parse_slice};
use crate::sync::changes::{Changes, object_key};
use crate::sync::runner::Trigger;

/// Upstream's label selector for the Service and EndpointSlice informers.
pub(crate) const PROXY_SELECTOR: &str =
    "!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless";

/// The caches the sync reads: records of Services and EndpointSlices, and the Node object.
#[derive(Clone)]
pub(crate) struct Stores {
    pub services: Store<ServiceRecord>,
    pub slices: Store<SliceRecord>,
    pub node: Store<Node>,
    /// `None` when not watched (iptables mode, or `--service-cidr` given).
    pub cidrs: Option<Store<ServiceCIDR>>,
}

impl Stores {
    /// The CIDRs of every ServiceCIDR object, as upstream's ServiceCIDRConfig collects them.
    pub(crate) fn service_cidrs(&self) -> Vec<ipnet::IpNet> {
        self.cidrs
            .as_ref()
            .map(|s| cidrs_of(s.state().iter().map(|o| &**o)))
            .unwrap_or_default()
    }
}

/// The union of the objects' `spec.cidrs` (the API server validated them; one that does not parse
/// is left out), sorted, without duplicates.
pub(crate) fn cidrs_of<'a>(objs: impl IntoIterator<Item = &'a ServiceCIDR>) -> Vec<ipnet::IpNet> {
    let mut out: Vec<ipnet::IpNet> = objs
        .into_iter()
        .filter_map(|o| o.spec.as_ref()?.cidrs.as_ref())
        .flatten()
        .filter_map(|c| crate::model::ip::parse_cidr_sloppy(c))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Where watch events go.
#[derive(Clone)]
pub(crate) struct Sink {
    pub changes: Arc<Mutex<Changes>>,
    pub trigger: Trigger,
    pub health: Arc<Health>,
    pub metrics: Arc<Metrics>,
    /// How long a Service change's sync waits for an EndpointSlice change to run with (see
    /// [`Trigger::request_held`]); zero: it does not wait.
    pub service_hold: Duration,
}

impl Sink {
    fn record(&self, f: impl FnOnce(&mut Changes)) {
        self.record_held(f, Duration::ZERO);
    }

    fn record_held(&self, f: impl FnOnce(&mut Changes), hold: Duration) {
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
        // Health knows the families synced (IPv6 is added after the watches start).
        for f in self.health.queued() {
            self.metrics
                .last_queued_timestamp
                .get_or_create(&family_labels(f))
                .set(unix_now());
        }
        if hold.is_zero() {
            self.trigger.request();
        } else {
            self.trigger.request_held(hold);
        }
    }
}

/// What a watcher carries, what the store keeps of it, and the change bookkeeping.
trait Source: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static {
    /// What the reflector store holds: a compact record, not the API object (memory: at 10k
    /// Services / 100k endpoints the objects were most of the daemon's memory).
    type Record: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static;
    /// Conversion state kept for the life of one watcher (the node-name interner).
    type State: Default + Send + 'static;

    fn convert(self, state: &mut Self::State) -> Self::Record;

    fn changed(rec: &Self::Record, sink: &Sink, deleted: bool);
}

/// `kubectl apply`'s copy of the whole object: often the largest annotation.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn trim_meta(meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) {
    meta.managed_fields = None;
    if let Some(a) = meta.annotations.as_mut() {
        a.remove(LAST_APPLIED);
    }
}

impl Source for Service {
    type Record = ServiceRecord;
    type State = ();

    fn convert(self, (): &mut ()) -> ServiceRecord {
        ServiceRecord::from_service(&self)
    }

    fn changed(rec: &ServiceRecord, sink: &Sink, deleted: bool) {
        sink.metrics.service_changes_total.inc();
        if !deleted {
            report_errors(sink, "Service", rec.errors());
        }
        // A deletion runs at once: the Service's slices go later, by garbage collection.
        let hold = if deleted {
            Duration::ZERO
        } else {
            sink.service_hold
        };
        sink.record_held(|c| c.service_changed(object_key(&rec.meta)), hold);
    }
}

impl Source for EndpointSlice {
    type Record = SliceRecord;
    type State = Interner;

    fn convert(self, names: &mut Interner) -> SliceRecord {
        parse_slice(&self, names)
    }

    fn changed(rec: &SliceRecord, sink: &Sink, deleted: bool) {
        sink.metrics.endpoint_changes_total.inc();
        if !deleted {
            report_errors(sink, "EndpointSlice", rec.errors.iter());
        }
        sink.record(|c| c.slice_changed(object_key(&rec.meta), rec.trigger_time));
    }
}

/// Logs and counts each field an object change left out of the rules: once per change, since the
/// record is built once per watch event (a sync only re-reads records).
fn report_errors<'a>(sink: &Sink, kind: &'static str, errors: impl IntoIterator<Item = &'a ModelError>) {
    for e in errors {
        tracing::warn!(error = %e, "field left out of the rules");
        sink.metrics
            .object_errors
            .get_or_create(&vec![("kind", kind.to_string())])
            .inc();
    }
}

/// The Node stays an API object (one of it), trimmed of what the proxy never reads.
impl Source for Node {
    type Record = Node;
    type State = ();

    fn convert(mut self, (): &mut ()) -> Node {
        trim_node(&mut self);
        self
    }

    fn changed(node: &Node, sink: &Sink, deleted: bool) {
        sink.health.set_node(if deleted { None } else { Some(node) });
        sink.record(Changes::other_changed);
    }
}

fn trim_node(node: &mut Node) {
    trim_meta(&mut node.metadata);
    if let Some(status) = node.status.as_mut() {
        status.images = None;
        status.volumes_attached = None;
        status.volumes_in_use = None;
    }
}

/// ServiceCIDRs feed the nftables base rules ("Drop traffic to unallocated ClusterIPs"). Upstream
/// only notes the change for its next sync; a sync is requested here so a new range is covered at once.
impl Source for ServiceCIDR {
    type Record = ServiceCIDR;
    type State = ();

    fn convert(mut self, (): &mut ()) -> ServiceCIDR {
        trim_meta(&mut self.metadata);
        self.status = None;
        self
    }

    fn changed(_: &ServiceCIDR, sink: &Sink, _deleted: bool) {
        sink.record(Changes::other_changed);
    }
}

/// The same event carrying the converted object.
fn map_event<K, R>(ev: Event<K>, mut f: impl FnMut(K) -> R) -> Event<R> {
    match ev {
        Event::Apply(o) => Event::Apply(f(o)),
        Event::Delete(o) => Event::Delete(f(o)),
        Event::InitApply(o) => Event::InitApply(f(o)),
        Event::Init => Event::Init,
        Event::InitDone => Event::InitDone,
    }
}

fn spawn<K: Source>(
    api: Api<K>,
    cfg: watcher::Config,
    sink: Sink,
    stop: CancellationToken,
) -> Store<K::Record> {
    let (reader, writer) = reflector::store();
    let kind = K::kind(&()).to_string();
    let mut state = K::State::default();
    let stream = watcher::watcher(api, cfg)
        .default_backoff()
        .map_ok(move |ev| map_event(ev, |o| o.convert(&mut state)))
        .reflect(writer);
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        loop {
            let next = tokio::select! {
                n = stream.next() => n,
                () = stop.cancelled() => break,
            };
            match next {
                Some(Ok(Event::Apply(o))) => {
                    tracing::debug!(kind, name = o.meta().name.as_deref(), "watch: applied");
                    K::changed(&o, &sink, false);
                }
                Some(Ok(Event::Delete(o))) => {
                    tracing::debug!(kind, name = o.meta().name.as_deref(), "watch: deleted");
                    K::changed(&o, &sink, true);
                }
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

/// Starts the reflectors (the ServiceCIDRs' only with `watch_cidrs`).
pub(crate) fn start(
    client: &Client,
    node_name: &str,
    sink: &Sink,
    stop: &CancellationToken,
    watch_cidrs: bool,
) -> Stores {
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
    let cidrs = watch_cidrs.then(|| {
        spawn(
            Api::<ServiceCIDR>::all(client.clone()),
            watcher::Config::default(),
            sink.clone(),
            stop.clone(),
        )
    });
    Stores {
        services,
        slices,
        node,
        cidrs,
    }
}

/// Waits for the first complete list of the Service, EndpointSlice and Node caches. Not the
/// ServiceCIDRs': upstream does not wait for them either (an API server without the resource must
/// not stop the proxy), and their arrival requests a sync.
pub(crate) async fn wait_synced(stores: &Stores) -> Result<(), reflector::store::WriterDropped> {
    stores.services.wait_until_ready().await?;
    stores.slices.wait_until_ready().await?;
    stores.node.wait_until_ready().await
}

mod records;

#[cfg(test)]
mod tests;
