//! Proxy health for `/healthz` and `/livez` on --healthz-bind-address (:10256), with upstream's JSON:
//! `{"lastUpdated", "currentTime", "nodeEligible" (healthz only), "healthy", "status": {"IPv4": ...}}`.
//!
//! A family is unhealthy when a change has been queued for longer than the timeout (2 x sync period)
//! without a successful sync. `/healthz` is also 503 when the node is not eligible for load balancer
//! traffic (Node missing, being deleted, or tainted ToBeDeletedByClusterAutoscaler), which is how GCE
//! health checks drain a node.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use k8s_openapi::api::core::v1::Node;
use serde_json::{Value, json};

use crate::metrics::Metrics;
use crate::model::Family;

pub(crate) const TO_BE_DELETED_TAINT: &str = "ToBeDeletedByClusterAutoscaler";

#[derive(Debug, Default)]
struct Inner {
    last_updated: BTreeMap<Family, SystemTime>,
    oldest_queued: BTreeMap<Family, Instant>,
    node_eligible: bool,
    families: Vec<Family>,
}

/// Shared health state, updated by the sync loop and the Node watcher.
#[derive(Debug)]
pub(crate) struct Health {
    timeout: Duration,
    inner: Mutex<Inner>,
}

/// Go's zero time, which upstream prints before the first sync.
const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

fn rfc3339(t: SystemTime) -> String {
    k8s_openapi::jiff::Timestamp::try_from(t).map_or_else(|_| ZERO_TIME.to_string(), |ts| ts.to_string())
}

/// What /healthz and /livez report.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Report {
    pub healthy: bool,
    pub node_eligible: bool,
    pub body: Value,
}

impl Health {
    pub(crate) fn new(timeout: Duration, families: Vec<Family>) -> Arc<Health> {
        Arc::new(Health {
            timeout,
            inner: Mutex::new(Inner {
                families,
                ..Inner::default()
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A change arrived that no sync has written yet (upstream's QueuedUpdate). Returns the families
    /// it was queued for: every family the daemon syncs, IPv6 included once added.
    pub(crate) fn queued(&self) -> Vec<Family> {
        let mut g = self.lock();
        for f in g.families.clone() {
            g.oldest_queued.entry(f).or_insert_with(Instant::now);
        }
        g.families.clone()
    }

    /// A sync of `family` succeeded (upstream's Updated).
    pub(crate) fn updated(&self, family: Family) {
        let mut g = self.lock();
        g.oldest_queued.remove(&family);
        g.last_updated.insert(family, SystemTime::now());
    }

    /// Tracks another family (IPv6, once the node turns out to have IPv6 addresses).
    pub(crate) fn add_family(&self, family: Family) {
        let mut g = self.lock();
        if !g.families.contains(&family) {
            g.families.push(family);
        }
    }

    pub(crate) fn set_node(&self, node: Option<&Node>) {
        self.lock().node_eligible = node_eligible(node);
    }

    /// Healthy when no family has had a change queued for longer than the timeout.
    pub(crate) fn healthy(&self) -> bool {
        self.report(false).healthy
    }

    pub(crate) fn report(&self, with_node: bool) -> Report {
        let g = self.lock();
        let now = SystemTime::now();
        let mut healthy = true;
        let mut status = serde_json::Map::new();
        for (fam, updated) in &g.last_updated {
            let late = g
                .oldest_queued
                .get(fam)
                .is_some_and(|q| q.elapsed() >= self.timeout);
            healthy &= !late;
            status.insert(
                fam.label().to_string(),
                json!({"lastUpdated": rfc3339(*updated), "healthy": !late}),
            );
        }
        let last = g.last_updated.values().max().copied();
        let ok = healthy && (!with_node || g.node_eligible);
        // As upstream: a healthy reply says lastUpdated = now (older releases' semantics).
        let last_updated = if ok {
            rfc3339(now)
        } else {
            last.map_or_else(|| ZERO_TIME.to_string(), rfc3339)
        };
        let mut body = json!({
            "lastUpdated": last_updated,
            "currentTime": rfc3339(now),
            "healthy": healthy,
        });
        if with_node {
            body["nodeEligible"] = json!(g.node_eligible);
        }
        if !status.is_empty() {
            body["status"] = Value::Object(status);
        }
        Report {
            healthy: ok,
            node_eligible: g.node_eligible,
            body,
        }
    }
}

/// Upstream's NodeEligible: the Node exists, is not being deleted and is not tainted for deletion.
pub(crate) fn node_eligible(node: Option<&Node>) -> bool {
    let Some(node) = node else {
        return false;
    };
    if node.metadata.deletion_timestamp.is_some() {
        return false;
    }
    !node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == TO_BE_DELETED_TAINT))
}

fn reply(report: Report) -> Response {
    let code = if report.healthy {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        code,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        report.body.to_string(),
    )
        .into_response()
}

fn code_label(r: &Report) -> Vec<(&'static str, String)> {
    vec![("code", if r.healthy { "200" } else { "503" }.to_string())]
}

/// `/healthz` and `/livez`.
pub(crate) fn router(health: Arc<Health>, metrics: Arc<Metrics>) -> Router {
    let (h1, m1) = (Arc::clone(&health), Arc::clone(&metrics));
    Router::new()
        .route(
            "/healthz",
            get(move || {
                let r = h1.report(true);
                m1.healthz_total.get_or_create(&code_label(&r)).inc();
                async move { reply(r) }
            }),
        )
        .route(
            "/livez",
            get(move || {
                let r = health.report(false);
                metrics.livez_total.get_or_create(&code_label(&r)).inc();
                async move { reply(r) }
            }),
        )
}

#[cfg(test)]
mod tests;
