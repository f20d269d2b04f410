//! Prometheus metrics on `--metrics-addr` `/metrics` (OpenMetrics text): GCE mutations by call
//! and result, syncs by controller and result, leadership. Labels are fixed strings (action
//! labels, error `metric_label()`s), never object names, so cardinality stays bounded.

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;

#[derive(Debug)]
pub(crate) struct Metrics {
    pub registry: Arc<Registry>,
    gce_calls: Family<Labels, Counter>,
    syncs: Family<Labels, Counter>,
    leader: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("svcnet_cloud_controller");
        let gce_calls = Family::<Labels, Counter>::default();
        let syncs = Family::<Labels, Counter>::default();
        let leader = Gauge::default();
        registry.register(
            "gce_calls",
            "Mutating GCE calls by call (action) and result (ok, already_done, kept_in_use, or the error class)",
            gce_calls.clone(),
        );
        registry.register(
            "syncs",
            "Syncs by controller (service, route, node) and result (ok or the error class)",
            syncs.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the leader lease",
            leader.clone(),
        );
        Metrics {
            registry: Arc::new(registry),
            gce_calls,
            syncs,
            leader,
        }
    }

    pub(crate) fn gce_call(&self, call: &str, result: &str) {
        self.gce_calls
            .get_or_create(&vec![
                ("call".into(), call.into()),
                ("result".into(), result.into()),
            ])
            .inc();
    }

    pub(crate) fn sync(&self, controller: &str, result: &str) {
        self.syncs
            .get_or_create(&vec![
                ("controller".into(), controller.into()),
                ("result".into(), result.into()),
            ])
            .inc();
    }

    pub(crate) fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    #[cfg(test)]
    /// The exposition text (for tests and debugging).
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests;
