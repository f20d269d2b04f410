//! The controllers that act on the cluster (I/O side): LoadBalancer Services, routes, node
//! initialisation/lifecycle. They share one [`Shared`] context: the kube client, the GCE
//! clients, the domain [`Config`] and a reflector store of Nodes.

pub(crate) mod lb;
pub(crate) mod node_watch;
pub(crate) mod nodes;
pub(crate) mod routes;

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::Store;

use crate::config::Config;
use crate::gce::client::Gce;
use crate::gce::error::GceError;
use crate::gce::retry::RetryPolicy;

/// Knobs of the controllers (from the command line).
#[derive(Debug, Clone)]
pub(crate) struct Tuning {
    /// Services reconciled at once.
    pub concurrency: usize,
    /// Periodic re-check of every load balancer (drift repair), besides watch events.
    pub lb_resync: Duration,
    /// Route reconciliation period (upstream: 10 s).
    pub route_resync: Duration,
    /// Node lifecycle check period (NotReady nodes whose instance is gone).
    pub node_monitor: Duration,
    pub retry: RetryPolicy,
    /// Requeue delay after a failed sync: doubled per consecutive failure up to `error_max`.
    pub error_base: Duration,
    pub error_max: Duration,
    /// Spacing of the re-verification of converged load balancers after a start
    /// (`verify_queue`); zero = verify all at once.
    pub verify_interval: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            concurrency: 32,
            lb_resync: Duration::from_secs(600),
            route_resync: Duration::from_secs(60),
            node_monitor: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            error_base: Duration::from_secs(1),
            error_max: Duration::from_secs(300),
            verify_interval: lb::verify_queue::verify_interval(20.0),
        }
    }
}

/// Everything the controllers share.
pub(crate) struct Shared {
    pub client: kube::Client,
    pub gce: Gce,
    pub cfg: Config,
    /// Zones the cluster's nodes live in (node initialisation looks instances up there).
    pub zones: Vec<String>,
    pub tuning: Tuning,
    pub nodes: Store<Node>,
    /// True once `nodes` holds the first full list.
    pub nodes_ready: tokio::sync::watch::Receiver<bool>,
    pub recorder: Recorder,
}

impl Shared {
    /// Waits until the node store holds the first full list (membership decisions need it).
    pub(crate) async fn wait_nodes_ready(&self) {
        let mut rx = self.nodes_ready.clone();
        let _ = rx.wait_for(|r| *r).await;
    }

    /// Current nodes (cloned out of the reflector store).
    pub(crate) fn node_list(&self) -> Vec<Node> {
        self.nodes.state().iter().map(|n| (**n).clone()).collect()
    }

    /// Publishes an event; failures are logged, never fail the sync (events are best effort).
    pub(crate) async fn event(
        &self,
        obj: &k8s_openapi::api::core::v1::ObjectReference,
        warning: bool,
        reason: &str,
        note: String,
    ) {
        let ev = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.to_owned(),
            note: Some(note),
            action: reason.to_owned(),
            secondary: None,
        };
        if let Err(err) = self.recorder.publish(&ev, obj).await {
            tracing::warn!(%err, reason, "publishing event failed");
        }
    }
}

/// Why a sync failed (the error policy requeues with backoff).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SyncError {
    #[error(transparent)]
    Gce(#[from] GceError),
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    NotConverged(String),
    /// A GCE refusal the Service's own configuration caused, with what to fix first.
    #[error("{hint} ({source})")]
    Explained { hint: String, source: GceError },
}

impl SyncError {
    pub(crate) fn metric_label(&self) -> &'static str {
        match self {
            SyncError::Gce(e) => e.metric_label(),
            SyncError::Kube(_) => "kube",
            SyncError::NotConverged(_) => "not_converged",
            SyncError::Explained { source, .. } => source.metric_label(),
        }
    }
}

/// `namespace/name` of a Service: the key of per-Service memory and logs.
pub(crate) fn key(svc: &k8s_openapi::api::core::v1::Service) -> String {
    use kube::ResourceExt;
    format!("{}/{}", svc.namespace().unwrap_or_default(), svc.name_any())
}

/// Exponential requeue delay for the `failures`-th consecutive failure.
pub(crate) fn error_delay(tuning: &Tuning, failures: u32) -> Duration {
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    tuning.error_base.saturating_mul(factor).min(tuning.error_max)
}

#[cfg(test)]
mod tests;
