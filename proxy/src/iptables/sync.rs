//! One sync of one IP family: model -> render -> full or partial payload -> apply -> conntrack.
//!
//! Full vs partial, as upstream: the first sync, the sync after a failed restore, the sync after a
//! KUBE-PROXY-CANARY chain vanished (checked at most once per sync period), and one sync per hour are
//! full: they ensure the jump rules, rewrite every svcnet chain and delete stale KUBE-SVC/SEP/...
//! chains found by iptables-save. Every other sync writes only the chains whose content changed since
//! the last successful sync and deletes the chains that disappeared. Rendering is incremental
//! ([`Renderer`]: digests of what the kernel holds, no rule text): unchanged service ports are not
//! rendered again, and payloads are restored batch by batch while the render goes on.

mod debug;

use std::collections::BTreeSet;
use std::time::Instant;

use super::Iptables;
use super::apply::{ensure_jumps, restore};
use super::render::naming::is_service_chain;
use super::render::{Done, FRESH_TABLE_MAX_CHAINS, PayloadStats, Renderer, UNBATCHED, ensured_jumps};
use crate::config::RenderConfig;
use crate::conntrack;
use crate::exec::ToolError;
use crate::metrics::{Metrics, family_labels, table_labels};
use crate::model::{Family, ModelCache, NodeFacts, ProxyState};
use crate::sync::{
    FullReason, FullSchedule, Outcome, Settings, Snapshot, SyncError, SyncRun, debug_path,
    reconcile_conntrack,
};

/// Per-family sync state.
#[derive(Debug)]
pub(crate) struct FamilySync {
    pub ipt: Iptables,
    model: ModelCache,
    /// What the kernel holds (as digests): updated only by a successful sync.
    renderer: Renderer,
    full: FullSchedule,
    last_canary_check: Instant,
    /// UDP service addresses at the last conntrack reconciliation (to clear deleted services' flows).
    udp_targets: conntrack::UdpTargets,
}

impl FamilySync {
    pub(crate) fn new(ipt: Iptables) -> FamilySync {
        FamilySync {
            model: ModelCache::new(ipt.family),
            ipt,
            renderer: Renderer::default(),
            full: FullSchedule::default(),
            last_canary_check: Instant::now(),
            udp_targets: conntrack::UdpTargets::default(),
        }
    }

    pub(crate) fn family(&self) -> Family {
        self.ipt.family
    }

    /// The model as of the last sync.
    pub(crate) fn state(&self) -> &ProxyState {
        self.model.state()
    }

    /// Decides whether this sync must be full.
    async fn full_reason(&mut self, settings: &Settings) -> Option<FullReason> {
        if let Some(r) = self.full.due(settings, self.model.state()) {
            return Some(r);
        }
        if self.last_canary_check.elapsed() >= settings.sync_period {
            self.last_canary_check = Instant::now();
            match self.ipt.missing_canaries().await {
                Ok(missing) if !missing.is_empty() => {
                    tracing::warn!(
                        ?missing,
                        "KUBE-PROXY-CANARY gone: someone flushed iptables, resyncing everything"
                    );
                    return Some(FullReason::Canary);
                }
                Ok(_) => {}
                Err(err) => tracing::warn!(%err, "canary check failed"),
            }
        }
        None
    }

    /// One sync. On failure the next one is full; the kernel keeps the previous rules.
    pub(crate) async fn sync(&mut self, snap: &Snapshot, run: &SyncRun<'_>) -> Result<Outcome, SyncError> {
        let (settings, metrics, seq) = (run.settings, run.metrics, run.seq);
        let started = Instant::now();
        let family = self.family();
        let labels = family_labels(family);
        let (node, cfg) = settings.begin(family, &mut self.model, snap).await;
        let full = self.full_reason(settings).await;
        let written = match self.apply(&node, &cfg, full, settings, seq).await {
            Ok(w) => w,
            Err(err) => {
                metrics.restore_failures.get_or_create(&labels).inc();
                if full.is_none() {
                    metrics.partial_restore_failures.get_or_create(&labels).inc();
                }
                self.full.failed();
                return Err(err.into());
            }
        };

        if full.is_some() {
            self.full.done();
            self.last_canary_check = Instant::now();
        }
        metrics.record_sync(
            family,
            full.map(FullReason::as_str),
            started.elapsed().as_secs_f64(),
        );
        record_rule_counts(metrics, family, &written);
        if written.calls > 1 {
            tracing::info!(
                calls = written.calls,
                chains = written.stats.chains_written,
                "large sync written in several iptables-restore calls"
            );
        }

        if settings.conntrack {
            let previous = std::mem::take(&mut self.udp_targets);
            self.udp_targets = reconcile_conntrack(metrics, family, self.model.state(), previous).await;
        }
        let stats = written.done.stats.clone();
        // Success: remember what the kernel holds now.
        self.renderer.commit(written.done);
        Ok(Outcome {
            full,
            payload_len: written.bytes,
            stats,
        })
    }

    /// Renders and restores, batch by batch as the render goes (a full sync of a large cluster never
    /// holds its whole payload). A full sync also ensures the jumps from the built-in chains and reads
    /// the nat table's chains to delete the stale ones in its last payload.
    async fn apply(
        &self,
        node: &NodeFacts,
        cfg: &RenderConfig,
        full: Option<FullReason>,
        settings: &Settings,
        seq: u64,
    ) -> Result<Written, ToolError> {
        if full.is_some() {
            ensure_jumps(&self.ipt, &ensured_jumps(cfg)).await?;
        }
        let mut max_chains = self.ipt.backend.restore_max_chains(settings.restore_max_chains);
        if full.is_some() && max_chains != UNBATCHED {
            // A fresh table: smaller calls (see FRESH_TABLE_MAX_CHAINS). A failed check changes nothing.
            let fresh = self
                .ipt
                .missing_canaries()
                .await
                .is_ok_and(|m| m.contains(&"nat"));
            if fresh {
                max_chains = max_chains.min(FRESH_TABLE_MAX_CHAINS);
            }
        }
        let mut debug = settings
            .payload_dir
            .as_deref()
            .map(|dir| debug_path(dir, seq, self.family(), full.is_some(), "rules"));
        let (mut bytes, mut calls) = (0, 0);
        let mut pass = self
            .renderer
            .begin(self.model.state(), node, cfg, full.is_some(), max_chains);
        while let Some(text) = pass.next_batch() {
            debug::save(&mut debug, &text);
            restore(&self.ipt, &text).await?;
            bytes += text.len();
            calls += 1;
        }
        let mut stale = BTreeSet::new();
        if full.is_some() {
            // Read after the service chains are written, so only chains this sync did not render are kept.
            let current = pass.own_chains();
            stale = self
                .ipt
                .chains_where("nat", |c| is_service_chain(c) && !current.contains(c))
                .await?;
        }
        let (rest, done) = pass.finish(full.is_some(), &stale);
        for text in &rest.texts {
            debug::save(&mut debug, text);
            restore(&self.ipt, text).await?;
            bytes += text.len();
            calls += 1;
        }
        Ok(Written {
            done,
            stats: rest.stats,
            bytes,
            calls,
        })
    }
}

/// What one sync wrote.
struct Written {
    done: Done,
    /// Of all payloads of the sync.
    stats: PayloadStats,
    bytes: usize,
    calls: usize,
}

fn record_rule_counts(metrics: &Metrics, family: Family, written: &Written) {
    let done = &written.done;
    for (table, total, last) in [
        ("filter", done.filter_rules, written.stats.filter_rules),
        ("nat", done.nat_rules, written.stats.nat_rules),
    ] {
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        metrics
            .rules_total
            .get_or_create(&table_labels(family, table))
            .set(gauge(total));
        metrics
            .rules_last
            .get_or_create(&table_labels(family, table))
            .set(gauge(last));
    }
    metrics.set_no_local(family, done.stats.no_local_internal, done.stats.no_local_external);
}
