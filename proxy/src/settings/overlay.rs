//! `--config FILE` laid over the flags: as with kube-proxy, a value in the file wins over the flag.
//! The file is read and its own fields checked by [`crate::config_file`]; what the values mean is
//! checked afterwards, with the flags', in [`super::RunSettings::from_args`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::RunArgs;
use crate::config::ProxyMode;
use crate::config_file::{
    ConfigFileError, ConntrackCfg, IptablesCfg, KubeProxyConfiguration, NftablesCfg, parse_duration,
};
use crate::model::ip::parse_cidr_sloppy;
use crate::sysctls::ConntrackArgs;

fn invalid(path: &Path, field: &str, reason: String) -> ConfigFileError {
    ConfigFileError::Invalid {
        path: path.to_path_buf(),
        field: field.to_string(),
        reason,
    }
}

fn duration(path: &Path, field: &str, text: &str) -> Result<Duration, ConfigFileError> {
    parse_duration(text).map_err(|e| invalid(path, field, e))
}

/// Applies `--config` over `args` (nothing without `--config`).
pub(super) fn apply_config_file(args: &mut RunArgs) -> Result<(), ConfigFileError> {
    let Some(path) = args.config.clone() else {
        return Ok(());
    };
    let f = KubeProxyConfiguration::load(&path)?;
    if let Some(k) = f
        .client_connection
        .and_then(|c| c.kubeconfig)
        .filter(|k| !k.is_empty())
    {
        args.kube.kubeconfig = Some(PathBuf::from(k));
    }
    if let Some(h) = f.hostname_override.filter(|h| !h.is_empty()) {
        args.hostname_override = Some(h);
    }
    if let Some(c) = f.cluster_cidr.filter(|c| !c.is_empty()) {
        args.rules.cluster_cidr = c
            .split(',')
            .map(|c| {
                parse_cidr_sloppy(c.trim())
                    .ok_or_else(|| invalid(&path, "clusterCIDR", format!("{c:?} is not a CIDR")))
            })
            .collect::<Result<_, _>>()?;
    }
    if let Some(m) = f.detect_local_mode.filter(|m| !m.is_empty()) {
        args.rules.detect_local_mode = m;
    }
    if let Some(d) = f.detect_local {
        if let Some(b) = d.bridge_interface.filter(|b| !b.is_empty()) {
            args.rules.pod_bridge_interface = Some(b);
        }
        if let Some(p) = d.interface_name_prefix.filter(|p| !p.is_empty()) {
            args.rules.pod_interface_name_prefix = Some(p);
        }
    }
    if let Some(c) = f.conntrack {
        conntrack(&path, c, &mut args.conntrack)?;
    }
    if let Some(m) = f.mode.as_deref() {
        args.proxy_mode = match m {
            "nftables" => ProxyMode::Nftables,
            _ => ProxyMode::Iptables,
        };
    }
    mode_section(&path, f.iptables, f.nftables, args)?;
    if let Some(n) = f.node_port_addresses {
        args.rules.nodeport_addresses = n;
    }
    if let Some(a) = f.healthz_bind_address {
        args.healthz_bind_address = a;
    }
    if let Some(a) = f.metrics_bind_address {
        args.metrics_bind_address = a;
    }
    Ok(())
}

/// The section of the mode in use (`iptables` or `nftables`) over the flags; the other is ignored,
/// as kube-proxy does.
fn mode_section(
    path: &Path,
    iptables: Option<IptablesCfg>,
    nftables: Option<NftablesCfg>,
    args: &mut RunArgs,
) -> Result<(), ConfigFileError> {
    if let Some(n) = nftables.filter(|_| args.proxy_mode == ProxyMode::Nftables) {
        if let Some(v) = n.masquerade_all {
            args.rules.masquerade_all = v;
        }
        if let Some(v) = n.masquerade_bit {
            args.rules.nftables_masquerade_bit = Some(v);
        }
        if let Some(v) = n.min_sync_period {
            args.iptables_min_sync_period = duration(path, "nftables.minSyncPeriod", &v)?;
        }
        if let Some(v) = n.sync_period {
            args.iptables_sync_period = duration(path, "nftables.syncPeriod", &v)?;
        }
    }
    if let Some(i) = iptables.filter(|_| args.proxy_mode == ProxyMode::Iptables) {
        if let Some(v) = i.masquerade_all {
            args.rules.masquerade_all = v;
        }
        if let Some(v) = i.masquerade_bit {
            args.rules.iptables_masquerade_bit = v;
        }
        if let Some(v) = i.localhost_node_ports {
            args.rules.iptables_localhost_nodeports = v;
        }
        if let Some(v) = i.min_sync_period {
            args.iptables_min_sync_period = duration(path, "iptables.minSyncPeriod", &v)?;
        }
        if let Some(v) = i.sync_period {
            args.iptables_sync_period = duration(path, "iptables.syncPeriod", &v)?;
        }
    }
    Ok(())
}

/// The `conntrack` section over the `--conntrack-*` flags; a field left out keeps the flag's value.
fn conntrack(path: &Path, c: ConntrackCfg, args: &mut ConntrackArgs) -> Result<(), ConfigFileError> {
    if let Some(v) = c.max_per_core {
        args.conntrack_max_per_core = v;
    }
    if let Some(v) = c.min {
        args.conntrack_min = v;
    }
    if let Some(v) = c.tcp_be_liberal {
        args.conntrack_tcp_be_liberal = v;
    }
    for (field, v, slot) in [
        (
            "conntrack.tcpEstablishedTimeout",
            c.tcp_established_timeout,
            &mut args.conntrack_tcp_timeout_established,
        ),
        (
            "conntrack.tcpCloseWaitTimeout",
            c.tcp_close_wait_timeout,
            &mut args.conntrack_tcp_timeout_close_wait,
        ),
        (
            "conntrack.udpTimeout",
            c.udp_timeout,
            &mut args.conntrack_udp_timeout,
        ),
        (
            "conntrack.udpStreamTimeout",
            c.udp_stream_timeout,
            &mut args.conntrack_udp_timeout_stream,
        ),
    ] {
        if let Some(v) = v {
            *slot = duration(path, field, &v)?;
        }
    }
    Ok(())
}
