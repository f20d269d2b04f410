//! `svcnet-proxy run`: the node agent. Wiring only; each step lives in its own module:
//! watch (caches) -> changes (bookkeeping) -> runner (when) -> sync (iptables mode) or nft_sync
//! (nftables mode) (render, full/partial, apply, conntrack) -> health, service_health, metrics.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use anyhow::{Context as _, Result, bail};

use svcnet_core::shutdown::Shutdown;

use crate::changes::Changes;
use crate::cli::{ProxyMode, RunArgs};
use crate::health::Health;
use crate::iptables::{Iptables, IptablesError, detect_backend};
use crate::metrics::{Metrics, family_labels};
use crate::model::{Family, NodeFacts, ProxyState};
use crate::nft_sync::NftFamilySync;
use crate::nftables::Nft;
use crate::runner::Runner;
use crate::service_health::{ServiceHealth, desired};
use crate::sync::{FamilySync, Outcome, Settings, Snapshot, SyncError};
use crate::watch::{self, Sink, Stores};

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

    async fn sync(
        &mut self,
        snap: &Snapshot,
        settings: &Settings,
        metrics: &Metrics,
        seq: u64,
    ) -> Result<Outcome, SyncError> {
        match self {
            Syncer::Iptables(f) => f.sync(snap, settings, metrics, seq).await,
            Syncer::Nftables(f) => f.sync(snap, settings, metrics, seq).await,
        }
    }
}

/// Removes what the other mode left on this node (a node switched between modes), best effort: the
/// other mode's tool may well be missing.
async fn clean_other_mode(mode: ProxyMode, ipt: &[&Iptables]) {
    match mode {
        ProxyMode::Iptables => {
            for family in [Family::V4, Family::V6] {
                match crate::nft_sync::cleanup(family).await {
                    Ok(true) => tracing::info!(
                        family = family.label(),
                        "removed the nftables mode's kube-proxy table"
                    ),
                    Ok(false) | Err(IptablesError::NotInstalled { .. }) => {}
                    Err(error) => tracing::warn!(%error, "removing the nftables mode's table"),
                }
            }
        }
        ProxyMode::Nftables => {
            for ipt in ipt {
                if ipt.check().await.is_err() {
                    continue;
                }
                match crate::cleanup::cleanup(ipt).await {
                    Ok(removed) => tracing::info!(
                        family = ipt.family.label(),
                        ?removed,
                        "removed the iptables mode's chains"
                    ),
                    Err(error) => tracing::warn!(%error, "removing the iptables mode's chains"),
                }
            }
        }
    }
}

/// A proxy that ran before (upstream kube-proxy programs IPv6 wherever ip6tables works) may have left
/// chains in a family this node does not sync; rules nobody updates any more must go, not linger.
async fn clean_unsynced_family(ipt: &Iptables) {
    if ipt.check().await.is_err() {
        return;
    }
    match crate::cleanup::cleanup(ipt).await {
        Ok(removed) if removed.jumps > 0 || !removed.chains.is_empty() => tracing::info!(
            family = ipt.family.label(),
            ?removed,
            "removed the chains of a previous proxy from a family this node does not sync"
        ),
        Ok(_) => {}
        Err(error) => {
            tracing::warn!(%error, family = ipt.family.label(), "removing a previous proxy's chains")
        }
    }
}

/// `""` disables a server; a bare IP gets the default port.
pub fn bind_address(text: &str, default_port: u16) -> Result<Option<SocketAddr>> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if let Ok(a) = t.parse::<SocketAddr>() {
        return Ok(Some(a));
    }
    let ip: std::net::IpAddr = t
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .with_context(|| format!("bind address {t:?}"))?;
    Ok(Some(SocketAddr::new(ip, default_port)))
}

/// The node name: --hostname-override, else --node-name, else the kernel hostname (lower-cased, as
/// upstream).
fn node_name(args: &RunArgs) -> Result<String> {
    let name = match (&args.hostname_override, args.rules.node_name.is_empty()) {
        (Some(h), _) if !h.trim().is_empty() => h.trim().to_string(),
        (_, false) => args.rules.node_name.clone(),
        _ => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .context("reading the hostname (set --hostname-override)")?
            .trim()
            .to_string(),
    };
    if name.is_empty() {
        bail!("empty node name: set --hostname-override");
    }
    Ok(name.to_lowercase())
}

fn read_sysctl(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

pub async fn run(mut args: RunArgs) -> Result<()> {
    args.apply_config_file()?;
    // Bad rule flags end the process here, before any rule is written, not at every sync later.
    args.rules
        .render_config(Family::V4, &NodeFacts::default())
        .context("invalid flags")?;
    svcnet_core::logging::init(&args.log)?;
    let shutdown = Shutdown::on_signal();
    let node = node_name(&args)?;
    args.rules.node_name = node.clone();
    let min_sync = args.iptables_min_sync_period;
    let sync_period = args.iptables_sync_period;
    let mode = args.proxy_mode;
    tracing::info!(node, ?mode, ?min_sync, ?sync_period, "starting svcnet-proxy");

    let backend = detect_backend(args.iptables_backend.forced()).await;
    let v4 = Iptables {
        restore_timeout: args.iptables_restore_timeout,
        ..Iptables::new(Family::V4, backend)
    };
    let v6_ipt = Iptables {
        restore_timeout: args.iptables_restore_timeout,
        ..Iptables::new(Family::V6, backend)
    };
    let checked = match mode {
        ProxyMode::Iptables => v4.check().await,
        ProxyMode::Nftables => Nft::new(Family::V4).check().await,
    };
    match checked {
        Ok(()) => {}
        Err(e @ IptablesError::NotInstalled { .. }) => bail!(
            "{e}: install {}",
            match mode {
                ProxyMode::Iptables => "iptables",
                ProxyMode::Nftables => "nftables",
            }
        ),
        Err(e) => bail!("{e} (is this a network namespace with netfilter?)"),
    }
    clean_other_mode(mode, &[&v4, &v6_ipt]).await;
    if let Err(e @ IptablesError::NotInstalled { .. }) = crate::conntrack::check().await {
        // Only UDP needs it; TCP services still work, so say so loudly and go on.
        tracing::error!(error = %e, "install conntrack-tools: stale UDP flows cannot be cleared without it");
    }
    crate::sysctls::apply(&args.conntrack);
    // nft's masquerade always takes fully-random.
    let random_fully = mode == ProxyMode::Nftables || v4.supports_random_fully().await;
    let tcp_liberal =
        read_sysctl("/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal").as_deref() == Some("1");
    if mode == ProxyMode::Iptables {
        tracing::info!(?backend, random_fully, tcp_liberal, "iptables detected");
    }

    // The nfacct matches belong to the iptables rules only.
    let nfacct = mode == ProxyMode::Iptables
        && match crate::nfacct::ensure().await {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(%error, "nfacct counters unavailable: the rules carry no nfacct matches and /metrics has no nfacct counts");
                false
            }
        };

    let client = svcnet_core::kube_client::client(&args.kube).await?;
    let (metrics, mut registry) = Metrics::new();
    if nfacct {
        metrics.register_nfacct(&mut registry);
    }
    if mode == ProxyMode::Nftables {
        metrics.register_nftables(&mut registry);
    }
    let changes = Arc::new(Mutex::new(Changes::default()));
    let mut runner = Runner::new(min_sync, sync_period, shutdown.clone());

    // IPv6 is decided once the Node is known; health starts with IPv4 and learns IPv6 below.
    let health_v4 = Health::new(sync_period * 2, vec![Family::V4]);
    let sink = Sink {
        changes: Arc::clone(&changes),
        trigger: runner.trigger(),
        health: Arc::clone(&health_v4),
        metrics: Arc::clone(&metrics),
    };
    let stop = shutdown.token();
    let stores = watch::start(&client, &node, &sink, &stop);

    if let Some(addr) = bind_address(&args.healthz_bind_address, svcnet_core::service::HEALTHZ_PORT)? {
        let listener = svcnet_core::http::bind(addr).await?;
        let router = crate::health::router(Arc::clone(&health_v4), Arc::clone(&metrics));
        tokio::spawn(svcnet_core::http::serve_listener(
            listener,
            router,
            shutdown.wait_owned(),
        ));
        tracing::info!(%addr, "healthz serving");
    }
    if let Some(addr) = bind_address(&args.metrics_bind_address, 10249)? {
        let listener = svcnet_core::http::bind(addr).await?;
        let registry = Arc::new(registry);
        let router = if nfacct {
            let m = Arc::clone(&metrics);
            svcnet_core::metrics::metrics_router_with_refresh(registry, move || {
                let m = Arc::clone(&m);
                async move {
                    match crate::nfacct::read().await {
                        Ok(counts) => m.set_nfacct(&counts),
                        Err(error) => tracing::warn!(%error, "reading nfacct counters"),
                    }
                }
            })
        } else {
            svcnet_core::metrics::metrics_router(registry)
        };
        tokio::spawn(svcnet_core::http::serve_listener(
            listener,
            router,
            shutdown.wait_owned(),
        ));
        tracing::info!(%addr, "metrics serving");
    }

    tracing::info!("waiting for Services, EndpointSlices and the Node to be listed");
    tokio::select! {
        r = watch::wait_synced(&stores) => r.context("cache writer dropped")?,
        () = shutdown.wait() => return Ok(()),
    }
    let node_obj = stores.node.state().first().map(|n| (**n).clone());
    health_v4.set_node(node_obj.as_ref());

    let mut families = vec![match mode {
        ProxyMode::Iptables => Syncer::Iptables(Box::new(FamilySync::new(v4))),
        ProxyMode::Nftables => Syncer::Nftables(Box::new(NftFamilySync::new(Nft::new(Family::V4)))),
    }];
    let settings = Settings {
        rules: args.rules.clone(),
        sync_period,
        random_fully,
        nfacct,
        tcp_liberal,
        payload_dir: args.write_payloads.clone(),
        large_cluster_full_resync: args.large_cluster_full_resync,
        conntrack: true,
        restore_max_chains: match args.iptables_restore_max_chains {
            0 => crate::render::UNBATCHED,
            n => n,
        },
    };
    let facts = settings.node_facts(&Snapshot {
        node: node_obj,
        ..Default::default()
    });
    if facts.ips.iter().any(|ip| ip.is_ipv6()) {
        let (checked, syncer) = match mode {
            ProxyMode::Iptables => (
                v6_ipt.check().await,
                Syncer::Iptables(Box::new(FamilySync::new(v6_ipt))),
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
                health_v4.add_family(Family::V6);
                families.push(syncer);
            }
            Err(error) => tracing::warn!(
                %error,
                "node has IPv6 addresses but IPv6 rules cannot be written: IPv6 services not proxied"
            ),
        }
    } else if mode == ProxyMode::Iptables {
        clean_unsynced_family(&v6_ipt).await;
    }
    let localhost_nodeports = settings
        .rules
        .render_config(Family::V4, &facts)
        .is_ok_and(|cfg| cfg.effective_localhost_nodeports());
    if localhost_nodeports && mode == ProxyMode::Iptables {
        // Upstream sets this so DNAT to pods works for connections to 127.0.0.1:nodePort.
        if let Err(err) = std::fs::write("/proc/sys/net/ipv4/conf/all/route_localnet", "1") {
            tracing::warn!(%err, "cannot set route_localnet: localhost NodePorts will not work");
        }
    }

    let mut ctx = Context {
        settings,
        metrics,
        health: health_v4,
        changes,
        stores,
        families,
        service_health: ServiceHealth::new(Arc::clone(&sink.health), stop.clone()),
        seq: 0,
    };
    while runner.wait().await {
        let ok = ctx.sync_once().await;
        runner.done(ok);
    }
    tracing::info!("stopped; rules stay in place (run `svcnet-proxy cleanup` to remove them)");
    Ok(())
}

impl Context {
    async fn sync_once(&mut self) -> bool {
        let (since, taken) = {
            let mut c = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
            (c.oldest(), c.take())
        };
        self.metrics.service_changes_pending.set(0);
        self.metrics.endpoint_changes_pending.set(0);
        let snap = Snapshot {
            services: self.stores.services.state(),
            slices: self.stores.slices.state(),
            node: self.stores.node.state().first().map(|n| (**n).clone()),
        };
        self.health.set_node(snap.node.as_ref());
        let mut ok = true;
        let mut synced = Vec::new();
        for fam in &mut self.families {
            self.seq += 1;
            let started = Instant::now();
            match fam.sync(&snap, &self.settings, &self.metrics, self.seq).await {
                Ok(out) => {
                    self.health.updated(fam.family());
                    tracing::info!(
                        family = fam.family().label(),
                        seq = self.seq,
                        full = out.full.map(|r| r.as_str()),
                        bytes = out.payload_len,
                        services = out.stats.services,
                        endpoints = out.stats.endpoints,
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "synced"
                    );
                    synced.push(fam.family());
                }
                Err(err) => {
                    ok = false;
                    tracing::error!(family = fam.family().label(), seq = self.seq, %err, "sync failed; previous rules stay, next sync is full");
                }
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
            let want = desired(&refs, &self.settings.rules.node_name);
            self.service_health.sync(&want).await;
        }
        ok
    }
}

/// Startup for `main`: a multi-threaded runtime is not needed; two worker threads keep the HTTP
/// servers responsive while a restore runs.
pub fn main(args: RunArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(run(args))
}
