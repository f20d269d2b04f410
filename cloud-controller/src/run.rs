//! Wiring: flags -> kube client -> health endpoint -> leader election -> cluster ID -> GCE
//! clients -> node reflector -> controllers. Losing the lease stops everything and exits non-zero
//! (a restarted replica queues for the lease again); SIGTERM stops and releases the lease.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use kube::runtime::events::{Recorder, Reporter};
use svcnet_core::shutdown::Shutdown;

use crate::cli::{Cli, CliError, Resolved};
use crate::config::Config;
use crate::controllers::node_watch::NodeTriggers;
use crate::controllers::{Shared, Tuning, lb, node_watch, nodes, routes};
use crate::gce::client::{Gce, GceOptions};
use crate::gce::retry::RetryPolicy;
use crate::{clusterid, leader, metadata};

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    svcnet_core::tls::install_crypto_provider();
    let shutdown = Shutdown::on_signal();
    let resolved = match cli.resolve((None, None)) {
        Ok(r) => r,
        Err(CliError::Missing(_)) => cli.resolve(metadata::discover().await)?,
        Err(e) => return Err(e.into()),
    };
    tracing::info!(?resolved, "starting");
    let client = svcnet_core::kube_client::client(&cli.kube)
        .await
        .context("kubernetes client")?;
    let metrics = Arc::new(crate::metrics::Metrics::new());
    serve_health(&cli, &metrics, &shutdown).await?;

    let mut leadership = if cli.leader.enabled {
        tokio::select! {
            l = leader::acquire(client.clone(), &cli.leader) => Some(l?),
            () = shutdown.wait() => return Ok(()),
        }
    } else {
        None
    };
    let identity = leadership.as_ref().map(|l| l.identity.clone());
    metrics.set_leader(true);

    let ids = clusterid::get_or_create(&client).await.context("cluster ID")?;
    tracing::info!(cluster_id = %ids.cluster, "cluster ID");
    let rbs_uid = rbs_namer_uid(&cli, &client).await?;
    let mut gce = Gce::new(&gce_options(&cli, &resolved))
        .await
        .context("GCE client")?;
    gce.metrics = metrics.clone();
    let (nodes_store, triggers, node_task) = node_watch::spawn(client.clone());
    let reporter = Reporter {
        controller: "svcnet-cloud-controller".into(),
        instance: identity,
    };
    let shared = Arc::new(Shared {
        client: client.clone(),
        gce,
        cfg: domain_config(&cli, &resolved, &ids.cluster, rbs_uid),
        zones: resolved.zones.clone(),
        tuning: tuning(&cli),
        nodes: nodes_store,
        nodes_ready: triggers.ready.clone(),
        recorder: Recorder::new(client.clone(), reporter),
    });
    let stop = Shutdown::new();
    let tasks = spawn_controllers(&cli, &shared, &triggers, &stop);

    let lost = match leadership.as_mut() {
        Some(l) => tokio::select! {
            () = shutdown.wait() => false,
            () = l.lost() => true,
        },
        None => {
            shutdown.wait().await;
            false
        }
    };
    metrics.set_leader(false);
    stop.trigger();
    for t in tasks {
        if tokio::time::timeout(Duration::from_secs(10), t).await.is_err() {
            tracing::warn!("a controller did not stop within 10 s");
        }
    }
    node_task.abort();
    if lost {
        anyhow::bail!("lost the leader lease; exiting so a restart can queue for it again");
    }
    if let Some(l) = leadership {
        l.release().await;
    }
    Ok(())
}

/// `/healthz` and `/metrics` until shutdown.
async fn serve_health(
    cli: &Cli,
    metrics: &crate::metrics::Metrics,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    let listener = svcnet_core::http::bind(cli.metrics_addr).await?;
    tracing::info!(addr = ?listener.local_addr().ok(), "serving /healthz and /metrics");
    let router = svcnet_core::metrics::metrics_router(metrics.registry.clone())
        .route("/healthz", axum::routing::get(|| async { "ok\n" }));
    tokio::spawn(svcnet_core::http::serve_listener(
        listener,
        router,
        shutdown.wait_owned(),
    ));
    Ok(())
}

/// With `--rbs-netlb`: the kube-system namespace UID the RBS names hash.
async fn rbs_namer_uid(cli: &Cli, client: &kube::Client) -> anyhow::Result<Option<String>> {
    if !cli.rbs_netlb {
        return Ok(None);
    }
    let uid = clusterid::kube_system_uid(client)
        .await
        .context("kube-system namespace (--rbs-netlb names)")?
        .context("kube-system namespace has no UID")?;
    Ok(Some(uid))
}

fn domain_config(cli: &Cli, resolved: &Resolved, cluster_id: &str, rbs_uid: Option<String>) -> Config {
    let mut cfg = Config::new(
        &resolved.project,
        &resolved.region,
        &resolved.network,
        cluster_id,
        &resolved.cluster_name,
    );
    cfg.node_tags = resolved.node_tags.clone();
    cfg.subnetwork = resolved.subnetwork.clone();
    cfg.etp_transition = cli.etp_transition.into();
    cfg.cluster_cidrs = cli.cluster_cidrs.clone();
    cfg.rbs_netlb = rbs_uid;
    cfg
}

fn gce_options(cli: &Cli, resolved: &Resolved) -> GceOptions {
    let mut opts = GceOptions::new(&resolved.project, &resolved.region);
    opts.endpoint = resolved.endpoint.clone();
    opts.credentials = cli.gce_credentials;
    opts.qps = cli.gce_qps;
    opts.burst = cli.gce_burst;
    opts.poll_initial = Duration::from_millis(cli.gce_poll_ms.max(1));
    opts
}

fn tuning(cli: &Cli) -> Tuning {
    Tuning {
        concurrency: cli.concurrency.max(1),
        lb_resync: Cli::duration(cli.lb_resync_seconds),
        route_resync: Cli::duration(cli.route_resync_seconds),
        node_monitor: Cli::duration(cli.node_monitor_seconds),
        retry: RetryPolicy {
            max_times: cli.gce_retries,
            ..RetryPolicy::default()
        },
        verify_interval: crate::controllers::lb::verify_queue::verify_interval(cli.gce_qps),
        ..Tuning::default()
    }
}

/// The controllers `--controllers` asks for, each stopping on `stop`.
fn spawn_controllers(
    cli: &Cli,
    shared: &Arc<Shared>,
    triggers: &NodeTriggers,
    stop: &Shutdown,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    if cli.wants("service") {
        tasks.push(tokio::spawn(lb::run(
            shared.clone(),
            triggers.clone(),
            stop.wait_owned(),
        )));
    }
    if cli.wants("route") {
        tasks.push(tokio::spawn(routes::run(
            shared.clone(),
            triggers.routes.clone(),
            stop.clone(),
        )));
    }
    if cli.wants("node") {
        tasks.push(tokio::spawn(nodes::run(
            shared.clone(),
            triggers.nodes.clone(),
            stop.clone(),
        )));
    }
    tasks
}
