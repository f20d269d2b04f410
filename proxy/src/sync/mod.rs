//! What both modes' syncs share, owned by neither: the sync loop's input ([`Snapshot`]) and settings
//! ([`Settings`]), why a sync is full ([`FullReason`], [`FULL_SYNC_PERIOD`], [`is_large`]), what it
//! did ([`Outcome`], [`RenderStats`]) or why it failed ([`SyncError`]), the UDP conntrack step that
//! follows every sync ([`reconcile_conntrack`]), and the loop's bookkeeping: [`changes`] (what
//! changed since the last sync) and [`runner`] (when the next one runs). Each mode's sync
//! (`crate::iptables::sync`, `crate::nftables::sync`) builds on these; this core knows neither:
//!
//! Never imports: crate::iptables, crate::nftables, crate::offline, crate::daemon, crate::cleanup.

pub(crate) mod changes;
pub(crate) mod runner;
mod stats;

pub(crate) use stats::{LARGE_CLUSTER_ENDPOINTS, RenderStats, is_large};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use thiserror::Error;

use crate::config::{NodeCaps, RenderConfig};
use crate::conntrack;
use crate::exec::ToolError;
use crate::metrics::{Metrics, family_labels};
use crate::model::{Family, ModelCache, NodeFacts, ProxyState, ServiceRecord, SliceRecord};
use crate::settings::RuleSettings;

/// Upstream forces a full sync at least this often, to repair anything partial syncs missed.
pub(crate) const FULL_SYNC_PERIOD: Duration = Duration::from_secs(3600);

/// Why a sync failed: the kernel keeps the rules it had, and the next sync is full.
#[derive(Debug, Error)]
pub(crate) enum SyncError {
    #[error(transparent)]
    Tool(#[from] ToolError),
}

/// Why the next sync is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FullReason {
    Start,
    Failure,
    Canary,
    Hourly,
}

impl FullReason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FullReason::Start => "start",
            FullReason::Failure => "failure",
            FullReason::Canary => "canary",
            FullReason::Hourly => "hourly",
        }
    }
}

/// When a family's next sync is full, as both upstream proxiers decide it: the first sync, the sync
/// after a failure, and one an hour (not in a large cluster unless asked). The iptables mode adds its
/// canary check on top.
#[derive(Debug)]
pub(crate) struct FullSchedule {
    next: Option<FullReason>,
    last: Option<Instant>,
}

impl Default for FullSchedule {
    fn default() -> FullSchedule {
        FullSchedule {
            next: Some(FullReason::Start),
            last: None,
        }
    }
}

impl FullSchedule {
    /// Why this sync must be full: a reason pending since the last sync, else the hourly resync.
    pub(crate) fn due(&self, settings: &Settings, state: &ProxyState) -> Option<FullReason> {
        if let Some(r) = self.next {
            return Some(r);
        }
        let hour_passed = self.last.is_none_or(|t| t.elapsed() >= FULL_SYNC_PERIOD);
        (hour_passed && (settings.large_cluster_full_resync || !is_large(state)))
            .then_some(FullReason::Hourly)
    }

    /// A sync failed: the kernel keeps what it had, and the next sync rewrites everything.
    pub(crate) fn failed(&mut self) {
        self.next = Some(FullReason::Failure);
    }

    /// A full sync succeeded.
    pub(crate) fn done(&mut self) {
        self.next = None;
        self.last = Some(Instant::now());
    }
}

/// The caches at the start of a sync: the reflectors' shared records, not copies.
#[derive(Clone, Debug, Default)]
pub(crate) struct Snapshot {
    pub services: Vec<Arc<ServiceRecord>>,
    pub slices: Vec<Arc<SliceRecord>>,
    pub node: Option<Node>,
    /// The CIDRs of the cluster's ServiceCIDR objects (nftables mode without `--service-cidr`).
    pub service_cidrs: Vec<ipnet::IpNet>,
}

/// What a sync needs that does not change while running: the checked rule flags and what was
/// detected on the node at start.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// `node_name` is the effective node name.
    pub rules: RuleSettings,
    pub sync_period: Duration,
    /// Detected at start (the nfacct counters exist once created).
    pub caps: NodeCaps,
    /// Debug: every payload written is also saved here ([`debug_path`]).
    pub payload_dir: Option<PathBuf>,
    pub conntrack: bool,
    /// Above this many chains an iptables sync is written in several restore calls.
    pub restore_max_chains: usize,
    /// Keep the hourly full resync in large clusters (kube-proxy 1.37 drops it there).
    pub large_cluster_full_resync: bool,
}

impl Settings {
    pub(crate) fn node_facts(&self, snap: &Snapshot) -> NodeFacts {
        self.rules.node_facts(snap.node.as_ref())
    }

    /// The render config of `family` on `node`: the rule flags plus the node's detected capabilities,
    /// and the ServiceCIDRs read from the API unless `--service-cidr` overrides them.
    pub(crate) fn render_config(&self, family: Family, node: &NodeFacts, snap: &Snapshot) -> RenderConfig {
        let mut cfg = self.rules.render_config(family, node);
        if self.rules.service_cidrs.is_empty() {
            cfg.service_cidrs = snap.service_cidrs.clone();
        }
        cfg.set_caps(self.caps);
        cfg
    }

    /// The start of every sync: `model` brought up to date with the snapshot, this node's live facts
    /// and the family's render config.
    pub(crate) async fn begin(
        &self,
        family: Family,
        model: &mut ModelCache,
        snap: &Snapshot,
    ) -> (NodeFacts, RenderConfig) {
        let started = Instant::now();
        model.update(&snap.services, &snap.slices);
        let model_us = started.elapsed().as_micros() as u64;
        let node = self.live_node_facts(snap).await;
        let cfg = self.render_config(family, &node, snap);
        let node_us = started.elapsed().as_micros() as u64 - model_us;
        tracing::debug!(model_us, node_us, "sync began");
        (node, cfg)
    }

    /// [`Settings::node_facts`] plus, with `--nodeport-addresses`, the live interface addresses its
    /// CIDRs select among.
    pub(crate) async fn live_node_facts(&self, snap: &Snapshot) -> NodeFacts {
        let mut node = self.node_facts(snap);
        if !self.rules.nodeport_addresses.cidrs.is_empty() || self.rules.nodeport_addresses.primary {
            for ip in crate::addresses::local_addresses().await {
                if !node.interface_ips.contains(&ip) {
                    node.interface_ips.push(ip);
                }
            }
        }
        node
    }
}

/// What one sync runs with besides the snapshot: the settings, where to count, and the sync's number
/// (it names the `--write-payloads` files).
pub(crate) struct SyncRun<'a> {
    pub settings: &'a Settings,
    pub metrics: &'a Metrics,
    pub seq: u64,
}

/// What a successful sync did.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub full: Option<FullReason>,
    /// Bytes of payload written (restore text, or the nftables netlink batch; 0: nothing changed).
    pub payload_len: usize,
    pub stats: RenderStats,
}

/// Debug (`--write-payloads DIR`): where sync `seq` of `family` saves what it wrote,
/// `DIR/NNNNNN-<ipv4|ipv6>-<full|partial>.<extension>`.
pub(crate) fn debug_path(dir: &Path, seq: u64, family: Family, full: bool, extension: &str) -> PathBuf {
    let fam = match family {
        Family::V4 => "ipv4",
        Family::V6 => "ipv6",
    };
    let kind = if full { "full" } else { "partial" };
    dir.join(format!("{seq:06}-{fam}-{kind}.{extension}"))
}

/// Reconciles the family's UDP flows against `state`; returns the UDP targets to remember for the
/// next sync (the old ones again when the listing failed, so a deleted service is retried).
pub(crate) async fn reconcile_conntrack(
    metrics: &Metrics,
    family: Family,
    state: &ProxyState,
    previous: conntrack::UdpTargets,
) -> conntrack::UdpTargets {
    let now = conntrack::UdpTargets::of(state);
    if !conntrack::worth_listing(&now, &previous) {
        return now;
    }
    let started = Instant::now();
    let labels = family_labels(family);
    let result = match conntrack::list(family).await {
        Ok(flows) => {
            let deletions = conntrack::stale_flows(state, &previous, &flows);
            conntrack::delete(family, &deletions)
                .await
                .map(|n| (flows.len(), deletions.len(), n))
        }
        Err(err) => Err(err),
    };
    let failed = result.is_err();
    match result {
        Ok((listed, filters, deleted)) => {
            tracing::debug!(listed, filters, deleted, "UDP conntrack entries reconciled");
            metrics.conntrack_deleted.get_or_create(&labels).inc_by(deleted);
        }
        Err(err) => tracing::warn!(%err, "conntrack reconciliation failed"),
    }
    metrics
        .conntrack_duration
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    if failed {
        // Keep what is still to be cleaned: deleted services would otherwise be forgotten.
        let mut keep = now;
        keep.vips.extend(previous.vips);
        keep.node_ports.extend(previous.node_ports);
        return keep;
    }
    now
}
