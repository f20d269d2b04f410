//! `/metrics` with upstream kube-proxy's names, types and labels (pkg/proxy/metrics, v1.33/34:
//! histograms, rule counts, failures and timestamps carry `ip_family`="IPv4"|"IPv6").
//!
//! prometheus-client appends `_total` to counters itself, so counters are registered without it.
//! Both modes report here; neither owns it.
//!
//! Never imports: crate::iptables, crate::nftables.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::model::Family as IpFamily;

pub(crate) type Labels = Vec<(&'static str, String)>;
type HistFamily = Family<Labels, Histogram, fn() -> Histogram>;
type FloatGauge = Gauge<f64, AtomicU64>;

fn sync_buckets() -> Histogram {
    // ExponentialBuckets(0.001, 2, 15), as upstream.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// 0.25, 0.5, 1..59, 60..115 step 5, 120..300 step 30 (upstream's MergeBuckets, which starts at 0).
pub(crate) fn network_programming_buckets() -> Vec<f64> {
    let mut b = vec![0.0, 0.25, 0.5];
    b.extend((1..=59).map(f64::from));
    b.extend((0..12).map(|i| 60.0 + 5.0 * f64::from(i)));
    b.extend((0..7).map(|i| 120.0 + 30.0 * f64::from(i)));
    b
}

fn network_programming_histogram() -> Histogram {
    Histogram::new(network_programming_buckets())
}

/// Every metric the daemon exports.
#[derive(Debug)]
pub(crate) struct Metrics {
    pub sync_duration: HistFamily,
    pub sync_full_duration: HistFamily,
    pub sync_partial_duration: HistFamily,
    pub network_programming: HistFamily,
    pub rules_total: Family<Labels, Gauge>,
    pub rules_last: Family<Labels, Gauge>,
    pub restore_failures: Family<Labels, Counter>,
    pub partial_restore_failures: Family<Labels, Counter>,
    pub endpoint_changes_pending: Gauge,
    pub endpoint_changes_total: Counter,
    pub service_changes_pending: Gauge,
    pub service_changes_total: Counter,
    pub last_timestamp: Family<Labels, FloatGauge>,
    pub last_queued_timestamp: Family<Labels, FloatGauge>,
    pub no_local_endpoints: Family<Labels, Gauge>,
    pub healthz_total: Family<Labels, Counter>,
    pub livez_total: Family<Labels, Counter>,
    pub conntrack_deleted: Family<Labels, Counter>,
    pub conntrack_duration: HistFamily,
    /// svcnet's own: full syncs by reason (start, failure, canary, hourly).
    pub full_syncs: Family<Labels, Counter>,
    pub nft_sync_failures: Family<Labels, Counter>,
    pub nft_cleanup_failures: Family<Labels, Counter>,
    /// svcnet's own: nftables transactions written, by writer (netlink, or the nft fallback).
    pub nft_writes: Family<Labels, Counter>,
    pub object_errors: Family<Labels, Counter>,
    /// nfacct packet counts (registered only when the counters exist, see [`Metrics::register_nfacct`]).
    pub ct_state_invalid_dropped: Counter,
    pub localhost_nodeports_accepted: Counter,
}

pub(crate) fn family_labels(f: IpFamily) -> Labels {
    vec![("ip_family", f.label().to_string())]
}

pub(crate) fn table_labels(f: IpFamily, table: &str) -> Labels {
    vec![("ip_family", f.label().to_string()), ("table", table.to_string())]
}

impl Metrics {
    /// Creates the metrics and registers them in a new registry.
    pub(crate) fn new() -> (Arc<Metrics>, Registry) {
        let m = Metrics {
            sync_duration: HistFamily::new_with_constructor(sync_buckets),
            sync_full_duration: HistFamily::new_with_constructor(sync_buckets),
            sync_partial_duration: HistFamily::new_with_constructor(sync_buckets),
            network_programming: HistFamily::new_with_constructor(network_programming_histogram),
            rules_total: Family::default(),
            rules_last: Family::default(),
            restore_failures: Family::default(),
            partial_restore_failures: Family::default(),
            endpoint_changes_pending: Gauge::default(),
            endpoint_changes_total: Counter::default(),
            service_changes_pending: Gauge::default(),
            service_changes_total: Counter::default(),
            last_timestamp: Family::default(),
            last_queued_timestamp: Family::default(),
            no_local_endpoints: Family::default(),
            healthz_total: Family::default(),
            livez_total: Family::default(),
            conntrack_deleted: Family::default(),
            conntrack_duration: HistFamily::new_with_constructor(sync_buckets),
            full_syncs: Family::default(),
            nft_sync_failures: Family::default(),
            nft_cleanup_failures: Family::default(),
            nft_writes: Family::default(),
            object_errors: Family::default(),
            ct_state_invalid_dropped: Counter::default(),
            localhost_nodeports_accepted: Counter::default(),
        };
        let mut r = Registry::default();
        m.register_sync(&mut r);
        m.register_changes(&mut r);
        m.register_health(&mut r);
        (Arc::new(m), r)
    }

    /// Sync latency, rule counts and restore failures, under upstream's names.
    fn register_sync(&self, r: &mut Registry) {
        let p = "kubeproxy_";
        r.register(
            format!("{p}sync_proxy_rules_duration_seconds"),
            "SyncProxyRules latency in seconds",
            self.sync_duration.clone(),
        );
        r.register(
            format!("{p}sync_full_proxy_rules_duration_seconds"),
            "SyncProxyRules latency in seconds for full resyncs",
            self.sync_full_duration.clone(),
        );
        r.register(
            format!("{p}sync_partial_proxy_rules_duration_seconds"),
            "SyncProxyRules latency in seconds for partial resyncs",
            self.sync_partial_duration.clone(),
        );
        r.register(
            format!("{p}network_programming_duration_seconds"),
            "In Cluster Network Programming Latency in seconds",
            self.network_programming.clone(),
        );
        r.register(
            format!("{p}sync_proxy_rules_iptables_total"),
            "Total number of iptables rules owned by kube-proxy",
            self.rules_total.clone(),
        );
        r.register(
            format!("{p}sync_proxy_rules_iptables_last"),
            "Number of iptables rules written by kube-proxy in last sync",
            self.rules_last.clone(),
        );
        r.register(
            format!("{p}sync_proxy_rules_iptables_restore_failures"),
            "Cumulative proxy iptables restore failures",
            self.restore_failures.clone(),
        );
        r.register(
            format!("{p}sync_proxy_rules_iptables_partial_restore_failures"),
            "Cumulative proxy iptables partial restore failures",
            self.partial_restore_failures.clone(),
        );
    }

    /// Pending and cumulative changes, sync timestamps and Local-policy gaps.
    fn register_changes(&self, r: &mut Registry) {
        let p = "kubeproxy_";
        r.register(
            format!("{p}sync_proxy_rules_endpoint_changes_pending"),
            "Pending proxy rules Endpoint changes",
            self.endpoint_changes_pending.clone(),
        );
        r.register(
            format!("{p}sync_proxy_rules_endpoint_changes"),
            "Cumulative proxy rules Endpoint changes",
            self.endpoint_changes_total.clone(),
        );
        r.register(
            format!("{p}sync_proxy_rules_service_changes_pending"),
            "Pending proxy rules Service changes",
            self.service_changes_pending.clone(),
        );
        r.register(
            format!("{p}sync_proxy_rules_service_changes"),
            "Cumulative proxy rules Service changes",
            self.service_changes_total.clone(),
        );
        r.register(
            format!("{p}sync_proxy_rules_last_timestamp_seconds"),
            "The last time proxy rules were successfully synced",
            self.last_timestamp.clone(),
        );
        r.register(
            format!("{p}sync_proxy_rules_last_queued_timestamp_seconds"),
            "The last time a sync of proxy rules was queued",
            self.last_queued_timestamp.clone(),
        );
        r.register(
            format!("{p}sync_proxy_rules_no_local_endpoints_total"),
            "Number of services with a Local traffic policy and no endpoints",
            self.no_local_endpoints.clone(),
        );
    }

    /// Health endpoints, conntrack cleanup, and svcnet's own counters.
    fn register_health(&self, r: &mut Registry) {
        let p = "kubeproxy_";
        r.register(
            format!("{p}proxy_healthz"),
            "Cumulative proxy healthz HTTP status",
            self.healthz_total.clone(),
        );
        r.register(
            format!("{p}proxy_livez"),
            "Cumulative proxy livez HTTP status",
            self.livez_total.clone(),
        );
        r.register(
            format!("{p}conntrack_reconciler_deleted_entries"),
            "Cumulative conntrack flows deleted by conntrack reconciler",
            self.conntrack_deleted.clone(),
        );
        r.register(
            format!("{p}conntrack_reconciler_sync_duration_seconds"),
            "ReconcileConntrackFlowsLatency latency in seconds",
            self.conntrack_duration.clone(),
        );
        r.register(
            "svcnet_proxy_full_syncs",
            "Full syncs by reason (start, failure, canary, hourly, forced)",
            self.full_syncs.clone(),
        );
        r.register(
            "svcnet_proxy_object_field_errors",
            "Fields of Services and EndpointSlices left out of the rules, by kind (counted once per change)",
            self.object_errors.clone(),
        );
    }
}

impl Metrics {
    /// A successful sync of `family`: its duration (all, and full or partial), the full-sync reason,
    /// the last-sync timestamp.
    pub(crate) fn record_sync(&self, family: IpFamily, full_reason: Option<&str>, elapsed: f64) {
        let labels = family_labels(family);
        self.sync_duration.get_or_create(&labels).observe(elapsed);
        let by_kind = if full_reason.is_some() {
            &self.sync_full_duration
        } else {
            &self.sync_partial_duration
        };
        by_kind.get_or_create(&labels).observe(elapsed);
        if let Some(reason) = full_reason {
            self.full_syncs
                .get_or_create(&vec![
                    ("ip_family", family.label().to_string()),
                    ("reason", reason.to_string()),
                ])
                .inc();
        }
        self.last_timestamp.get_or_create(&labels).set(unix_now());
    }

    /// Services with a Local policy and no local endpoint, by policy.
    pub(crate) fn set_no_local(&self, family: IpFamily, internal: usize, external: usize) {
        for (policy, n) in [("internal", internal), ("external", external)] {
            self.no_local_endpoints
                .get_or_create(&vec![
                    ("ip_family", family.label().to_string()),
                    ("traffic_policy", policy.to_string()),
                ])
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Exports the nftables mode's failure counters (upstream registers them in that mode only).
    pub(crate) fn register_nftables(&self, registry: &mut Registry) {
        registry.register(
            "kubeproxy_sync_proxy_rules_nftables_sync_failures",
            "Cumulative proxy nftables sync failures",
            self.nft_sync_failures.clone(),
        );
        registry.register(
            "kubeproxy_sync_proxy_rules_nftables_cleanup_failures",
            "Cumulative proxy nftables cleanup failures",
            self.nft_cleanup_failures.clone(),
        );
        registry.register(
            "svcnet_proxy_nftables_writes",
            "nftables transactions written, by writer (netlink; nft: the fallback for what the netlink encoder cannot express)",
            self.nft_writes.clone(),
        );
    }

    /// Exports the nfacct counters under upstream's names; only once they exist, since upstream emits
    /// nothing for a counter it cannot read.
    pub(crate) fn register_nfacct(&self, registry: &mut Registry) {
        registry.register(
            "kubeproxy_iptables_ct_state_invalid_dropped_packets",
            "packets dropped by iptables to work around conntrack problems",
            self.ct_state_invalid_dropped.clone(),
        );
        registry.register(
            "kubeproxy_iptables_localhost_nodeports_accepted_packets",
            "Number of packets accepted on nodeports of loopback interface",
            self.localhost_nodeports_accepted.clone(),
        );
    }

    /// Brings the nfacct counters up to the kernel's counts (they only grow; a counter recreated by
    /// someone else starts lower and is left alone until it passes the exported value).
    /// `None`: the counter is missing.
    pub(crate) fn set_nfacct(&self, invalid_dropped: Option<u64>, localhost_nodeports: Option<u64>) {
        for (count, counter) in [
            (invalid_dropped, &self.ct_state_invalid_dropped),
            (localhost_nodeports, &self.localhost_nodeports_accepted),
        ] {
            if let Some(now) = count.as_ref() {
                let seen = counter.get();
                if *now > seen {
                    counter.inc_by(now - seen);
                }
            }
        }
    }
}

/// Seconds since the Unix epoch, for the timestamp gauges.
pub(crate) fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests;
