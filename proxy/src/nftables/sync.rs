//! One sync of one IP family in nftables mode: model -> render (only changed service ports) ->
//! transaction (only what changed) -> one netlink batch -> conntrack.
//!
//! Full, as upstream's nftables proxier: the first sync, the sync after a failure and one per hour
//! (not in large clusters, as the iptables mode) declare everything and remove the table's stale
//! chains and sets. Two failed full transactions in a row make the next one clear the table but for
//! its hooked chains and write it again (in one batch, so there is no moment without rules; deleting
//! the table instead if the kernel refuses that): an object whose definition nft cannot change in
//! place then stops blocking every sync, while a passing failure (a batch refused once) is retried
//! by a streamed full sync, not a one-batch reload of the whole table. Every other sync writes only
//! what changed.

use std::time::Instant;

use super::kernel::{Nft, Writer};
use super::maps_sync::MapsSync;
use super::render::{self as nft, Applied};
use crate::config::{NftLayout, RenderConfig};
use crate::conntrack;
use crate::exec::ToolError;
use crate::metrics::{Metrics, family_labels};
use crate::model::{Family, ModelCache, NodeFacts, ProxyState};
use crate::sync::{
    FullReason, FullSchedule, Outcome, RenderStats, Settings, Snapshot, SyncError, SyncRun, debug_path,
    reconcile_conntrack,
};

/// Per-family sync state.
#[derive(Debug)]
pub(crate) struct NftFamilySync {
    pub nft: Nft,
    model: ModelCache,
    /// What the kernel holds: updated only by a successful transaction.
    applied: Applied,
    full: FullSchedule,
    failed_fulls: FailedFulls,
    udp_targets: conntrack::UdpTargets,
    /// The maps layout's state (`--nftables-layout maps`); `applied` stays empty then.
    maps: MapsSync,
}

impl NftFamilySync {
    pub(crate) fn new(nft: Nft) -> NftFamilySync {
        NftFamilySync {
            model: ModelCache::new(nft.family),
            nft,
            applied: Applied::default(),
            full: FullSchedule::default(),
            failed_fulls: FailedFulls::default(),
            udp_targets: conntrack::UdpTargets::default(),
            maps: MapsSync::default(),
        }
    }

    pub(crate) fn family(&self) -> Family {
        self.nft.family
    }

    pub(crate) fn state(&self) -> &ProxyState {
        self.model.state()
    }

    /// One sync. On failure the next one is full; the kernel keeps the previous ruleset.
    pub(crate) async fn sync(&mut self, snap: &Snapshot, run: &SyncRun<'_>) -> Result<Outcome, SyncError> {
        let (settings, metrics, seq) = (run.settings, run.metrics, run.seq);
        let started = Instant::now();
        let family = self.family();
        let labels = family_labels(family);
        // The series exists from the first sync on, at 0, so rate() works before any failure.
        let _ = metrics.nft_sync_failures.get_or_create(&labels);
        let _ = metrics.nft_cleanup_failures.get_or_create(&labels);
        // nfacct and the iptables-only capabilities are off in this mode (settings say so).
        let (node, cfg) = settings.begin(family, &mut self.model, snap).await;
        let full = self.full.due(settings, self.model.state());

        let maps_layout = cfg.nft_layout == NftLayout::Maps;
        let written = if maps_layout {
            self.maps
                .sync(
                    &self.nft,
                    &self.model,
                    node,
                    cfg,
                    full.is_some(),
                    settings.payload_dir.as_deref().map(|d| (d, seq)),
                )
                .await
        } else {
            match full {
                Some(_) => self.write_upstream_full(&node, &cfg, settings, seq).await,
                None => {
                    let inputs = nft::Inputs::new(self.model.state(), node, cfg);
                    self.write_partial(inputs, settings, seq).await
                }
            }
        };
        let payload_len = match count_write(written, metrics, &labels) {
            Ok(bytes) => bytes,
            Err(err) => {
                // The kernel keeps the previous ruleset (or, for a full sync, the batches it took);
                // the next sync is full.
                self.failed_fulls.count(full.is_some());
                self.full.failed();
                return Err(SyncError::Tool(err));
            }
        };
        if full.is_some() {
            self.full.done();
            self.failed_fulls = FailedFulls::default();
        }
        let after = Instant::now();
        let stats = render_stats(self.no_local(maps_layout), self.model.state());
        metrics.record_sync(
            family,
            full.map(FullReason::as_str),
            started.elapsed().as_secs_f64(),
        );
        metrics.set_no_local(family, stats.no_local_internal, stats.no_local_external);
        if settings.conntrack {
            let previous = std::mem::take(&mut self.udp_targets);
            self.udp_targets = reconcile_conntrack(metrics, family, self.model.state(), previous).await;
        }
        tracing::debug!(
            after_us = after.elapsed().as_micros() as u64,
            "sync after the write"
        );
        Ok(Outcome {
            full,
            payload_len,
            stats,
        })
    }

    /// Service ports whose Local policy finds no local endpoint, in what the last sync wrote.
    fn no_local(&self, maps_layout: bool) -> nft::NoLocal {
        if maps_layout {
            self.maps.no_local()
        } else {
            self.applied.no_local()
        }
    }

    /// Only what changed, in one batch; committed when the kernel took it.
    async fn write_partial(&mut self, inputs: nft::Inputs, settings: &Settings, seq: u64) -> Written {
        let tx = nft::partial(&self.applied, inputs);
        if let Some(dir) = &settings.payload_dir
            && !tx.ops.is_empty()
        {
            write_debug(&debug_path(dir, seq, self.family(), false, "nft"), &tx.text());
        }
        let (tx, written) = self.nft.write(tx).await;
        tracing::debug!(stats = ?tx.stats, "nftables transaction applied");
        if written.is_ok() {
            self.applied.commit(tx);
        }
        written
    }

    /// The upstream layout's full sync over what the table has (a terse listing). Streamed, but in
    /// one batch that clears the table around its hooks after two failed full syncs in a row, or
    /// over a table the maps layout wrote (a node switching layouts: streamed over it, upstream's
    /// dispatch would be live before its elements). A clearing batch the kernel refuses is sent
    /// again as a recreation of the table, and so is the table after two failed syncs when it
    /// cannot be listed (a failed listing is a failed full sync).
    async fn write_upstream_full(
        &mut self,
        node: &NodeFacts,
        cfg: &RenderConfig,
        settings: &Settings,
        seq: u64,
    ) -> Written {
        let failed_twice = self.failed_fulls.twice();
        let existing = match self.nft.existing().await {
            Ok(existing) => Some(existing),
            Err(_) if failed_twice => None,
            Err(err) => return Err(err),
        };
        let start = match &existing {
            None => nft::Start::Recreated,
            Some(e) if failed_twice || e.sets.iter().any(|s| s == nft::maps::MASQ_CLUSTER) => {
                nft::Start::Cleared
            }
            Some(_) => nft::Start::Over,
        };
        let existing = existing.unwrap_or_default();
        match self.write_full(node, cfg, existing, start, settings, seq).await {
            Err(error) if start == nft::Start::Cleared => {
                tracing::warn!(%error, "clearing the table around its hooks failed; recreating it");
                let (none, again) = (nft::Existing::default(), nft::Start::Recreated);
                self.write_full(node, cfg, none, again, settings, seq).await
            }
            written => written,
        }
    }

    /// Everything from `existing` as `start` says, streamed (in one batch when `start` clears or
    /// recreates the table).
    async fn write_full(
        &mut self,
        node: &NodeFacts,
        cfg: &RenderConfig,
        existing: nft::Existing,
        start: nft::Start,
        settings: &Settings,
        seq: u64,
    ) -> Written {
        let inputs = nft::Inputs::new(self.model.state(), node.clone(), cfg.clone());
        let stream = nft::FullStream::new(inputs, existing, start);
        let debug = settings
            .payload_dir
            .as_ref()
            .map(|dir| debug_path(dir, seq, self.family(), true, "nft"));
        let (stream, written) = self.nft.write_full(stream, debug).await;
        tracing::debug!(stats = ?stream.stats, "nftables full transaction applied");
        if written.is_ok() {
            self.applied.commit_full(stream);
        }
        written
    }
}

/// Full transactions that failed in a row (a failed partial one counts as none: the next sync is
/// full anyway).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct FailedFulls(u32);

impl FailedFulls {
    fn count(&mut self, full: bool) {
        self.0 = if full { self.0.saturating_add(1) } else { 0 };
    }

    /// Two failed in a row: the next full sync writes the table in one batch from nothing but its
    /// hooked chains.
    fn twice(self) -> bool {
        self.0 >= 2
    }
}

type Written = Result<(Writer, usize), ToolError>;

/// Counts a write by its writer, or a failure.
fn count_write(
    written: Result<(Writer, usize), ToolError>,
    metrics: &Metrics,
    labels: &crate::metrics::Labels,
) -> Result<usize, ToolError> {
    match written {
        Ok((writer, bytes)) => {
            if bytes > 0 {
                let mut l = labels.clone();
                l.push(("writer", writer.label().to_string()));
                metrics.nft_writes.get_or_create(&l).inc();
            }
            Ok(bytes)
        }
        Err(err) => {
            metrics.nft_sync_failures.get_or_create(labels).inc();
            Err(err)
        }
    }
}

/// Debug (`--write-payloads`): every transaction as `NNNNNN-<family>-<full|partial>.nft`, the
/// `nft -f` text of what went over netlink.
fn write_debug(path: &std::path::Path, text: &str) {
    if let Err(err) = std::fs::write(path, text) {
        tracing::warn!(%err, path = %path.display(), "writing debug transaction failed");
    }
}

fn render_stats(no_local: nft::NoLocal, state: &ProxyState) -> RenderStats {
    RenderStats {
        services: state.services.len(),
        endpoints: state.endpoints.values().map(|e| e.len()).sum(),
        no_local_internal: no_local.internal,
        no_local_external: no_local.external,
    }
}

/// Deletes the `kube-proxy` table of `family` (switching the node to the iptables mode).
pub(crate) async fn cleanup(family: Family) -> Result<bool, ToolError> {
    Nft::new(family).delete_table().await
}

#[cfg(test)]
mod tests {
    use super::FailedFulls;

    #[test]
    fn the_table_is_recreated_only_after_two_failed_full_syncs_in_a_row() {
        let mut f = FailedFulls::default();
        f.count(true);
        assert!(!f.twice(), "one failure is retried by a streamed full sync");
        f.count(true);
        assert!(f.twice());
        f.count(false);
        assert!(!f.twice(), "a failed partial sync starts over");
        f.count(true);
        assert!(!f.twice());
    }
}
