//! One sync of one IP family: model -> render -> full or partial payload -> apply -> conntrack.
//!
//! Full vs partial, as upstream: the first sync, the sync after a failed restore, the sync after a
//! KUBE-PROXY-CANARY chain vanished (checked at most once per sync period), and one sync per hour are
//! full: they ensure the jump rules, rewrite every svcnet chain and delete stale KUBE-SVC/SEP/...
//! chains found by iptables-save. Every other sync writes only the chains whose content changed since
//! the last successful sync (the render the kernel holds is kept) and deletes the chains that
//! disappeared. Rendering is incremental ([`Renderer`]): unchanged service ports are not rendered
//! again, and the diff skips them by pointer.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use thiserror::Error;

use crate::apply::{ensure_jumps, restore, rules_per_table};
use crate::cli::RuleArgs;
use crate::conntrack;
use crate::input::Objects;
use crate::iptables::{Iptables, IptablesError, saved_chains};
use crate::metrics::{Metrics, family_labels, table_labels, unix_now};
use crate::model::{Family, ModelCache, NodeFacts, ProxyState, ServiceRecord, SliceRecord};
use crate::render::naming::is_service_chain;
use crate::render::{FullOptions, Payloads, RenderStats, Rendered, Renderer, jumps};

/// Upstream forces a full sync at least this often, to repair anything partial syncs missed.
pub const FULL_SYNC_PERIOD: Duration = Duration::from_secs(3600);

#[derive(Debug, Error)]
pub enum SyncError {
    #[error("configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Iptables(#[from] IptablesError),
}

/// Why the next sync is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FullReason {
    Start,
    Failure,
    Canary,
    Hourly,
}

impl FullReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FullReason::Start => "start",
            FullReason::Failure => "failure",
            FullReason::Canary => "canary",
            FullReason::Hourly => "hourly",
        }
    }
}

/// The caches at the start of a sync: the reflectors' shared records, not copies.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub services: Vec<Arc<ServiceRecord>>,
    pub slices: Vec<Arc<SliceRecord>>,
    pub node: Option<Node>,
}

/// Settings that do not change while running.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Rule flags; `node_name` is already the effective node name.
    pub rules: RuleArgs,
    pub sync_period: Duration,
    pub random_fully: bool,
    pub tcp_liberal: bool,
    /// Debug: every payload written is also saved here as `NNNNNN-<family>-<full|partial>.rules`.
    pub payload_dir: Option<PathBuf>,
    pub conntrack: bool,
    /// Above this many chains a sync is written in several restore calls (see [`Payloads`]).
    pub restore_max_chains: usize,
}

impl Settings {
    pub fn node_facts(&self, snap: &Snapshot) -> NodeFacts {
        let objects = Objects {
            nodes: snap.node.iter().cloned().collect(),
            ..Default::default()
        };
        self.rules.node_facts(&objects)
    }
}

/// What a successful sync did.
#[derive(Debug)]
pub struct Outcome {
    pub full: Option<FullReason>,
    /// Bytes of payload written (0: nothing changed, no restore ran).
    pub payload_len: usize,
    pub stats: RenderStats,
}

/// Per-family sync state.
#[derive(Debug)]
pub struct FamilySync {
    pub ipt: Iptables,
    model: ModelCache,
    renderer: Renderer,
    /// What the kernel holds: the last successfully applied render.
    applied: Option<Rendered>,
    next_full: Option<FullReason>,
    last_full: Option<Instant>,
    last_canary_check: Instant,
    prev: Option<ProxyState>,
}

impl FamilySync {
    pub fn new(ipt: Iptables) -> FamilySync {
        FamilySync {
            model: ModelCache::new(ipt.family),
            ipt,
            renderer: Renderer::default(),
            applied: None,
            next_full: Some(FullReason::Start),
            last_full: None,
            last_canary_check: Instant::now(),
            prev: None,
        }
    }

    pub fn family(&self) -> Family {
        self.ipt.family
    }

    /// The model as of the last sync.
    pub fn state(&self) -> &ProxyState {
        self.model.state()
    }

    /// Decides whether this sync must be full.
    async fn full_reason(&mut self, settings: &Settings) -> Option<FullReason> {
        if let Some(r) = self.next_full {
            return Some(r);
        }
        if self.last_full.is_none_or(|t| t.elapsed() >= FULL_SYNC_PERIOD) {
            return Some(FullReason::Hourly);
        }
        if self.last_canary_check.elapsed() >= settings.sync_period {
            self.last_canary_check = Instant::now();
            match self.ipt.missing_canaries().await {
                Ok(missing) if !missing.is_empty() => {
                    tracing::warn!(family = ?self.family(), ?missing, "KUBE-PROXY-CANARY gone: someone flushed iptables, resyncing everything");
                    return Some(FullReason::Canary);
                }
                Ok(_) => {}
                Err(err) => tracing::warn!(%err, "canary check failed"),
            }
        }
        None
    }

    /// One sync. On failure the next one is full; the kernel keeps the previous rules.
    pub async fn sync(
        &mut self,
        snap: &Snapshot,
        settings: &Settings,
        metrics: &Metrics,
        seq: u64,
    ) -> Result<Outcome, SyncError> {
        let started = Instant::now();
        let family = self.family();
        let labels = family_labels(family);
        self.model.update(&snap.services, &snap.slices);
        for e in &self.model.state().errors {
            tracing::debug!(error = %e, "object skipped");
        }
        let mut node = settings.node_facts(snap);
        if !settings.rules.nodeport_addresses.is_empty() {
            // CIDRs in --nodeport-addresses select among the live interface addresses.
            for ip in crate::addresses::local_addresses().await {
                if !node.interface_ips.contains(&ip) {
                    node.interface_ips.push(ip);
                }
            }
        }
        let mut cfg = settings
            .rules
            .render_config(family, &node)
            .map_err(|e| SyncError::Config(format!("{e:#}")))?;
        cfg.random_fully = settings.random_fully;
        cfg.conntrack_tcp_liberal = settings.tcp_liberal;
        let rendered = self.renderer.render(self.model.state(), &node, &cfg);

        let full = self.full_reason(settings).await;
        let result = match (full, &self.applied) {
            (None, Some(prev)) => match rendered.partial_payloads_since(prev, settings.restore_max_chains) {
                None => Ok(Payloads::default()),
                Some(payloads) => restore_all(&self.ipt, &payloads).await.map(|()| payloads),
            },
            _ => self.full_apply(&rendered, &cfg, settings).await,
        };
        let payload = match result {
            Ok(p) => p,
            Err(err) => {
                metrics.restore_failures.get_or_create(&labels).inc();
                if full.is_none() {
                    metrics.partial_restore_failures.get_or_create(&labels).inc();
                }
                self.next_full = Some(FullReason::Failure);
                return Err(err.into());
            }
        };
        self.save_debug(settings, seq, full, &payload);

        let stats = rendered.stats.clone();
        if let Some(r) = full {
            self.next_full = None;
            self.last_full = Some(Instant::now());
            self.last_canary_check = Instant::now();
            metrics
                .full_syncs
                .get_or_create(&vec![
                    ("ip_family", family.label().to_string()),
                    ("reason", r.as_str().to_string()),
                ])
                .inc();
        }
        let elapsed = started.elapsed().as_secs_f64();
        metrics.sync_duration.get_or_create(&labels).observe(elapsed);
        if full.is_some() {
            metrics.sync_full_duration.get_or_create(&labels).observe(elapsed);
        } else {
            metrics
                .sync_partial_duration
                .get_or_create(&labels)
                .observe(elapsed);
        }
        record_rule_counts(metrics, family, &rendered, &payload);
        if payload.texts.len() > 1 {
            tracing::info!(
                family = ?family,
                calls = payload.texts.len(),
                chains = payload.stats.chains_written,
                "large sync written in several iptables-restore calls"
            );
        }
        metrics.last_timestamp.get_or_create(&labels).set(unix_now());

        if let Some(prev) = self.prev.as_ref().filter(|_| settings.conntrack) {
            cleanup_conntrack(metrics, family, prev, self.model.state()).await;
        }
        self.prev = Some(conntrack::udp_only(self.model.state()));
        // Success: remember what the kernel holds now.
        self.applied = Some(rendered);
        Ok(Outcome {
            full,
            payload_len: payload.len(),
            stats,
        })
    }

    async fn full_apply(
        &self,
        rendered: &Rendered,
        cfg: &crate::config::RenderConfig,
        settings: &Settings,
    ) -> Result<Payloads, IptablesError> {
        let saved = self.ipt.save_table("nat").await?;
        let current: BTreeSet<&str> = rendered.nat.iter().map(|c| c.name.as_str()).collect();
        let stale_nat: BTreeSet<String> = saved_chains(&saved)
            .into_iter()
            .filter(|c| is_service_chain(c) && !current.contains(c.as_str()))
            .collect();
        ensure_jumps(&self.ipt, &jumps(cfg)).await?;
        let opts = FullOptions {
            jumps: false,
            canaries: true,
            stale_nat,
        };
        let payloads = rendered.full_payloads(&opts, cfg, settings.restore_max_chains);
        restore_all(&self.ipt, &payloads).await?;
        Ok(payloads)
    }

    fn save_debug(&self, settings: &Settings, seq: u64, full: Option<FullReason>, payloads: &Payloads) {
        let Some(dir) = &settings.payload_dir else {
            return;
        };
        let fam = match self.family() {
            Family::V4 => "ipv4",
            Family::V6 => "ipv6",
        };
        let kind = if full.is_some() { "full" } else { "partial" };
        let path = dir.join(format!("{seq:06}-{fam}-{kind}.rules"));
        if let Err(err) = std::fs::write(&path, payloads.joined()) {
            tracing::warn!(%err, path = %path.display(), "writing debug payload failed");
        }
    }
}

/// Restores each payload in order; the first failure stops (the next sync is full).
async fn restore_all(ipt: &Iptables, payloads: &Payloads) -> Result<(), IptablesError> {
    for text in &payloads.texts {
        restore(ipt, text).await?;
    }
    Ok(())
}

fn record_rule_counts(metrics: &Metrics, family: Family, rendered: &Rendered, payload: &Payloads) {
    for (table, chains) in [("filter", &rendered.filter), ("nat", &rendered.nat)] {
        let n: usize = chains.iter().map(|c| c.rules.len()).sum();
        metrics
            .rules_total
            .get_or_create(&table_labels(family, table))
            .set(i64::try_from(n).unwrap_or(i64::MAX));
        metrics
            .rules_last
            .get_or_create(&table_labels(family, table))
            .set(0);
    }
    let mut per_table: Vec<(String, usize)> = Vec::new();
    for (table, n) in payload.texts.iter().flat_map(|t| rules_per_table(t)) {
        match per_table.iter_mut().find(|(t, _)| *t == table) {
            Some(entry) => entry.1 += n,
            None => per_table.push((table, n)),
        }
    }
    for (table, n) in per_table {
        metrics
            .rules_last
            .get_or_create(&table_labels(family, &table))
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }
    for (policy, n) in [
        ("internal", rendered.stats.no_local_internal),
        ("external", rendered.stats.no_local_external),
    ] {
        metrics
            .no_local_endpoints
            .get_or_create(&vec![
                ("ip_family", family.label().to_string()),
                ("traffic_policy", policy.to_string()),
            ])
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }
}

async fn cleanup_conntrack(metrics: &Metrics, family: Family, prev: &ProxyState, now: &ProxyState) {
    let deletions = conntrack::stale_flows(prev, now);
    if deletions.is_empty() {
        return;
    }
    let started = Instant::now();
    let labels = family_labels(family);
    match conntrack::delete(family, &deletions).await {
        Ok(n) => {
            tracing::debug!(
                filters = deletions.len(),
                deleted = n,
                "stale UDP conntrack entries removed"
            );
            metrics.conntrack_deleted.get_or_create(&labels).inc_by(n);
        }
        Err(err) => tracing::warn!(%err, "conntrack cleanup failed"),
    }
    metrics
        .conntrack_duration
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
}
