//! The agent's start: probing and preparing netfilter on the node (the tools of the configured mode,
//! what the other mode left, conntrack sysctls, nfacct counters), and the health and metrics servers.

use std::sync::Arc;

use anyhow::{Result, bail};
use prometheus_client::registry::Registry;
use svcnet_core::shutdown::Shutdown;

use crate::config::{NodeCaps, ProxyMode};
use crate::exec::ToolError;
use crate::health::Health;
use crate::iptables::{Iptables, detect_backend};
use crate::metrics::Metrics;
use crate::model::Family;
use crate::nftables::kernel::Nft;
use crate::settings::RunSettings;

/// What the start found on the node.
pub(super) struct Netfilter {
    pub v4: Iptables,
    pub v6: Iptables,
    pub caps: NodeCaps,
}

/// Checks the mode's tools (fatal when missing), removes the other mode's rules and sets the
/// conntrack sysctls; detects what the rules may use.
pub(super) async fn netfilter(args: &RunSettings) -> Result<Netfilter> {
    let backend = detect_backend(args.backend).await;
    let v4 = Iptables {
        restore_timeout: args.restore_timeout,
        ..Iptables::new(Family::V4, backend)
    };
    let v6 = Iptables {
        restore_timeout: args.restore_timeout,
        ..Iptables::new(Family::V6, backend)
    };
    let checked = match args.mode {
        ProxyMode::Iptables => v4.check().await,
        ProxyMode::Nftables => Nft::new(Family::V4).check().await,
    };
    match checked {
        Ok(()) => {}
        Err(e @ ToolError::NotInstalled { .. }) => bail!(
            "{e}: install {}",
            match args.mode {
                ProxyMode::Iptables => "iptables",
                ProxyMode::Nftables => "nftables",
            }
        ),
        Err(e) => bail!("{e} (is this a network namespace with netfilter?)"),
    }
    clean_other_mode(args.mode, &[&v4, &v6]).await;
    if let Err(e @ ToolError::NotInstalled { .. }) = crate::conntrack::check().await {
        // Only UDP needs it; TCP services still work, so say so loudly and go on.
        tracing::error!(error = %e, "install conntrack-tools: stale UDP flows cannot be cleared without it");
    }
    crate::sysctls::apply(&args.conntrack);
    // nft's masquerade always takes fully-random.
    let random_fully = args.mode == ProxyMode::Nftables || v4.supports_random_fully().await;
    let tcp_liberal =
        read_sysctl("/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal").as_deref() == Some("1");
    if args.mode == ProxyMode::Iptables {
        tracing::info!(?backend, random_fully, tcp_liberal, "iptables detected");
    }

    // The nfacct matches belong to the iptables rules only.
    let nfacct = args.mode == ProxyMode::Iptables
        && match crate::iptables::nfacct::ensure().await {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(%error, "nfacct counters unavailable: the rules carry no nfacct matches and /metrics has no nfacct counts");
                false
            }
        };
    Ok(Netfilter {
        v4,
        v6,
        caps: NodeCaps {
            random_fully,
            nfacct,
            tcp_liberal,
        },
    })
}

/// Sets `net.ipv4.conf.all.route_localnet` as upstream does, so DNAT to pods works for connections
/// to 127.0.0.1:nodePort.
pub(super) fn route_localnet() {
    if let Err(err) = std::fs::write("/proc/sys/net/ipv4/conf/all/route_localnet", "1") {
        tracing::warn!(%err, "cannot set route_localnet: localhost NodePorts will not work");
    }
}

/// Starts the health and metrics servers the settings ask for.
pub(super) async fn serve(
    args: &RunSettings,
    health: &Arc<Health>,
    metrics: &Arc<Metrics>,
    registry: Registry,
    nfacct: bool,
    shutdown: &Shutdown,
) -> Result<()> {
    if let Some(addr) = args.healthz_address {
        let listener = svcnet_core::http::bind(addr).await?;
        let router = crate::health::router(Arc::clone(health), Arc::clone(metrics));
        tokio::spawn(svcnet_core::http::serve_listener(
            listener,
            router,
            shutdown.wait_owned(),
        ));
        tracing::info!(%addr, "healthz serving");
    }
    if let Some(addr) = args.metrics_address {
        let listener = svcnet_core::http::bind(addr).await?;
        let registry = Arc::new(registry);
        let router = if nfacct {
            let m = Arc::clone(metrics);
            svcnet_core::metrics::metrics_router_with_refresh(registry, move || {
                let m = Arc::clone(&m);
                async move {
                    match crate::iptables::nfacct::read_exported().await {
                        Ok((invalid, localhost)) => m.set_nfacct(invalid, localhost),
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
    Ok(())
}

/// Removes what the other mode left on this node (a node switched between modes), best effort: the
/// other mode's tool may well be missing.
async fn clean_other_mode(mode: ProxyMode, ipt: &[&Iptables]) {
    match mode {
        ProxyMode::Iptables => {
            for family in [Family::V4, Family::V6] {
                match crate::nftables::sync::cleanup(family).await {
                    Ok(true) => tracing::info!(
                        family = family.label(),
                        "removed the nftables mode's kube-proxy table"
                    ),
                    Ok(false) | Err(ToolError::NotInstalled { .. }) => {}
                    Err(error) => tracing::warn!(%error, "removing the nftables mode's table"),
                }
            }
        }
        ProxyMode::Nftables => {
            for ipt in ipt {
                if ipt.check().await.is_err() {
                    continue;
                }
                match crate::iptables::cleanup::cleanup(ipt).await {
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
pub(super) async fn clean_unsynced_family(ipt: &Iptables) {
    if ipt.check().await.is_err() {
        return;
    }
    match crate::iptables::cleanup::cleanup(ipt).await {
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

fn read_sysctl(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}
