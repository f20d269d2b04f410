//! `svcnet-proxy run`: the node agent. Wiring only; each step lives in its own module:
//! watch (caches) -> `sync::changes` (bookkeeping) -> `sync::runner` (when) -> the mode's sync,
//! `iptables::sync` or `nftables::sync` (render, full/partial, apply, conntrack) -> health,
//! service_health, metrics.
//! What happens once, at start, is in [`start`].

mod start;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use anyhow::{Context as _, Result};

use svcnet_core::shutdown::Shutdown;

use crate::config::ProxyMode;
use crate::health::Health;
use crate::iptables::FamilySync;
use crate::metrics::{Metrics, family_labels};
use crate::model::{Family, NodeFacts, ProxyState};
use crate::nftables::NftFamilySync;
use crate::nftables::kernel::Nft;
use crate::service_health::{ServiceHealth, desired};
use crate::settings::RunSettings;
use crate::sync::changes::Changes;
use crate::sync::runner::Runner;
use crate::sync::{Outcome, Settings, Snapshot, SyncError, SyncRun};
use crate::watch::{self, Sink, Stores};

/// Syncs an idle proxy may run back to back, so a new Service's EndpointSlice, a second watch
/// event, is live right after the Service instead of a min-sync-period later (see [`Runner`]).
const SYNC_BURST: u32 = 2;

/// Everything the sync loop needs.
struct Context {
    settings: Settings,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    changes: Arc<Mutex<Changes>>,
    stores: Stores,
    families: Vec<Syncer>,
    service_health: ServiceHealth,
    seq: u64,
}

/// One family's sync in the configured mode.
#[derive(Debug)]
enum Syncer {
    Iptables(Box<FamilySync>),
    Nftables(Box<NftFamilySync>),
}

impl Syncer {
    fn family(&self) -> Family {
        match self {
            Syncer::Iptables(f) => f.family(),
            Syncer::Nftables(f) => f.family(),
        }
    }

    fn state(&self) -> &ProxyState {
        match self {
            Syncer::Iptables(f) => f.state(),
            Syncer::Nftables(f) => f.state(),
        }
    }

    async fn sync(&mut self, snap: &Snapshot, run: &SyncRun<'_>) -> Result<Outcome, SyncError> {
        match self {
            Syncer::Iptables(f) => f.sync(snap, run).await,
            Syncer::Nftables(f) => f.sync(snap, run).await,
        }
    }
}

/// Runs the agent with settings checked before (a bad flag never gets this far).
pub async fn run(args: RunSettings) -> Result<()> {
    svcnet_core::logging::init(&args.log)?;
    let shutdown = Shutdown::on_signal();
    let node = args.rules.node_name.clone();
    let (mode, min_sync, sync_period) = (args.mode, args.min_sync_period, args.sync_period);
    tracing::info!(node, ?mode, ?min_sync, ?sync_period, "starting svcnet-proxy");
    warn_bad_config(&args);

    let nf = start::netfilter(&args).await?;
    let client = svcnet_core::kube_client::client(&args.kube).await?;
    let (metrics, mut registry) = Metrics::new();
    if nf.caps.nfacct {
        metrics.register_nfacct(&mut registry);
    }
    if mode == ProxyMode::Nftables {
        metrics.register_nftables(&mut registry);
    }
    let changes = Arc::new(Mutex::new(Changes::default()));
    let mut runner = Runner::new(min_sync, sync_period, shutdown.clone()).with_burst(SYNC_BURST);

    // IPv6 is decided once the Node is known; health starts with IPv4 and learns IPv6 below.
    let health = Health::new(sync_period * 2, vec![Family::V4]);
    let sink = Sink {
        changes: Arc::clone(&changes),
        trigger: runner.trigger(),
        health: Arc::clone(&health),
        metrics: Arc::clone(&metrics),
        service_hold: args.service_hold,
    };
    let stop = shutdown.token();
    // Only the nftables rules use the ServiceCIDRs, and `--service-cidr` overrides the API's.
    let watch_cidrs = mode == ProxyMode::Nftables && args.rules.service_cidrs.is_empty();
    let stores = watch::start(&client, &node, &sink, &stop, watch_cidrs);
    start::serve(&args, &health, &metrics, registry, nf.caps.nfacct, &shutdown).await?;

    tracing::info!("waiting for Services, EndpointSlices and the Node to be listed");
    tokio::select! {
        r = watch::wait_synced(&stores) => r.context("cache writer dropped")?,
        () = shutdown.wait() => return Ok(()),
    }
    let settings = sync_settings(&args, &nf);
    let node_obj = stores.node.state().first().map(|n| (**n).clone());
    health.set_node(node_obj.as_ref());
    let facts = settings.rules.node_facts(node_obj.as_ref());
    let families = families(mode, nf, &facts, &health).await;
    if mode == ProxyMode::Iptables
        && settings
            .rules
            .render_config(Family::V4, &facts)
            .effective_localhost_nodeports()
    {
        start::route_localnet();
    }

    let mut ctx = Context {
        settings,
        metrics,
        health,
        changes,
        stores,
        families,
        service_health: ServiceHealth::new(Arc::clone(&sink.health), stop.clone()),
        seq: 0,
    };
    while runner.wait().await {
        tracing::debug!(reason = ?runner.last_reason, "sync due");
        let ok = ctx.sync_once().await;
        runner.done(ok);
    }
    tracing::info!("stopped; rules stay in place (run `svcnet-proxy cleanup` to remove them)");
    Ok(())
}

/// Upstream's checkBadConfig warning; only the iptables mode can get here with the NodePort
/// addresses unset (the nftables mode defaults to `primary`).
fn warn_bad_config(args: &RunSettings) {
    if args.rules.nodeport_addresses.is_unset() {
        tracing::warn!(
            err = "nodePortAddresses is unset; NodePort connections will be accepted on all local IPs. Consider using `--nodeport-addresses primary`",
            "Kube-proxy configuration may be incomplete or incorrect"
        );
    }
}

/// The sync loop's settings: the checked flags and what the node's netfilter can do.
fn sync_settings(args: &RunSettings, nf: &start::Netfilter) -> Settings {
    Settings {
        rules: args.rules.clone(),
        sync_period: args.sync_period,
        caps: nf.caps,
        payload_dir: args.payload_dir.clone(),
        large_cluster_full_resync: args.large_cluster_full_resync,
        conntrack: true,
        restore_max_chains: args.restore_max_chains,
    }
}

/// The families to sync: IPv4, and IPv6 when the node has an IPv6 address and its rules can be
/// written. In iptables mode a family not synced is cleaned of a previous proxy's chains.
async fn families(mode: ProxyMode, nf: start::Netfilter, facts: &NodeFacts, health: &Health) -> Vec<Syncer> {
    let mut families = vec![match mode {
        ProxyMode::Iptables => Syncer::Iptables(Box::new(FamilySync::new(nf.v4))),
        ProxyMode::Nftables => Syncer::Nftables(Box::new(NftFamilySync::new(Nft::new(Family::V4)))),
    }];
    if !facts.ips.iter().any(|ip| ip.is_ipv6()) {
        if mode == ProxyMode::Iptables {
            start::clean_unsynced_family(&nf.v6).await;
        }
        return families;
    }
    let (checked, syncer) = match mode {
        ProxyMode::Iptables => (
            nf.v6.check().await,
            Syncer::Iptables(Box::new(FamilySync::new(nf.v6))),
        ),
        ProxyMode::Nftables => {
            let nft = Nft::new(Family::V6);
            (
                nft.check().await,
                Syncer::Nftables(Box::new(NftFamilySync::new(nft))),
            )
        }
    };
    match checked {
        Ok(()) => {
            health.add_family(Family::V6);
            families.push(syncer);
        }
        Err(error) => tracing::warn!(
            %error,
            "node has IPv6 addresses but IPv6 rules cannot be written: IPv6 services not proxied"
        ),
    }
    families
}

impl Context {
    async fn sync_once(&mut self) -> bool {
        let (since, taken) = {
            let mut c = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
            (c.oldest(), c.take())
        };
        self.metrics.service_changes_pending.set(0);
        self.metrics.endpoint_changes_pending.set(0);
        let started = Instant::now();
        let snap = Snapshot {
            services: self.stores.services.state(),
            slices: self.stores.slices.state(),
            node: self.stores.node.state().first().map(|n| (**n).clone()),
            service_cidrs: self.stores.service_cidrs(),
        };
        self.health.set_node(snap.node.as_ref());
        tracing::debug!(
            snapshot_us = started.elapsed().as_micros() as u64,
            "sync snapshot"
        );
        let mut ok = true;
        let mut synced = Vec::new();
        for fam in &mut self.families {
            self.seq += 1;
            if sync_family(fam, &snap, &self.settings, &self.metrics, self.seq).await {
                self.health.updated(fam.family());
                synced.push(fam.family());
            } else {
                ok = false;
            }
        }
        if ok {
            let now = SystemTime::now();
            for t in &taken.trigger_times {
                if let Ok(d) = now.duration_since(*t) {
                    for fam in &self.families {
                        self.metrics
                            .network_programming
                            .get_or_create(&family_labels(fam.family()))
                            .observe(d.as_secs_f64());
                    }
                }
            }
        } else {
            let mut c = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
            c.restore(taken, since.unwrap_or_else(Instant::now));
        }
        if !synced.is_empty() {
            let refs: Vec<&crate::model::ProxyState> = self
                .families
                .iter()
                .filter(|f| synced.contains(&f.family()))
                .map(Syncer::state)
                .collect();
            let health_started = Instant::now();
            let want = desired(&refs, &self.settings.rules.node_name);
            self.service_health.sync(&want).await;
            tracing::debug!(
                health_us = health_started.elapsed().as_micros() as u64,
                total_us = started.elapsed().as_micros() as u64,
                "sync of all families done"
            );
        }
        ok
    }
}

/// One family's sync in a span that carries the family and the sync's number, so every line logged
/// while it runs (the mode's sync, conntrack) names them without repeating them. False: it failed.
#[tracing::instrument(name = "sync", skip_all, fields(family = fam.family().label(), seq))]
async fn sync_family(
    fam: &mut Syncer,
    snap: &Snapshot,
    settings: &Settings,
    metrics: &Metrics,
    seq: u64,
) -> bool {
    let started = Instant::now();
    let run = SyncRun {
        settings,
        metrics,
        seq,
    };
    match fam.sync(snap, &run).await {
        Ok(out) => {
            tracing::info!(
                full = out.full.map(|r| r.as_str()),
                bytes = out.payload_len,
                services = out.stats.services,
                endpoints = out.stats.endpoints,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "synced"
            );
            true
        }
        Err(err) => {
            tracing::error!(%err, "sync failed; previous rules stay, next sync is full");
            false
        }
    }
}

/// Startup for `main`: a runtime with two worker threads, so the health and metrics servers answer
/// while a sync renders or a restore runs.
pub fn main(args: RunSettings) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(run(args))
}
