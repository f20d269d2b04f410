//! `--config FILE`: the subset of kube-proxy's `KubeProxyConfiguration` (kubeproxy.config.k8s.io/v1alpha1)
//! that svcnet understands, read and checked field by field. As with kube-proxy, values from the file win
//! over command-line flags (laid over them by `settings`).
//! Unknown fields are ignored (so upstream files load); `mode` must be empty, `iptables` or `nftables`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigFileError {
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("parsing {path}: {source}")]
    Parse {
        path: PathBuf,
        source: crate::yaml::Error,
    },
    #[error("{path}: {field}: {reason}")]
    Invalid {
        path: PathBuf,
        field: String,
        reason: String,
    },
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClientConnection {
    pub kubeconfig: Option<String>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DetectLocalCfg {
    pub bridge_interface: Option<String>,
    pub interface_name_prefix: Option<String>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IptablesCfg {
    pub masquerade_all: Option<bool>,
    pub masquerade_bit: Option<u32>,
    pub min_sync_period: Option<String>,
    pub sync_period: Option<String>,
    pub localhost_node_ports: Option<bool>,
}

/// `nftables`: read in nftables mode, as `iptables` is in iptables mode.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NftablesCfg {
    pub masquerade_all: Option<bool>,
    pub masquerade_bit: Option<u32>,
    pub min_sync_period: Option<String>,
    pub sync_period: Option<String>,
}

/// `conntrack`: durations in Go syntax; a field left out keeps the flag's value.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConntrackCfg {
    pub max_per_core: Option<u64>,
    pub min: Option<u64>,
    pub tcp_established_timeout: Option<String>,
    pub tcp_close_wait_timeout: Option<String>,
    pub tcp_be_liberal: Option<bool>,
    pub udp_timeout: Option<String>,
    pub udp_stream_timeout: Option<String>,
}

/// The fields svcnet reads.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KubeProxyConfiguration {
    pub kind: Option<String>,
    pub mode: Option<String>,
    pub client_connection: Option<ClientConnection>,
    pub hostname_override: Option<String>,
    #[serde(rename = "clusterCIDR")]
    pub cluster_cidr: Option<String>,
    pub detect_local_mode: Option<String>,
    pub detect_local: Option<DetectLocalCfg>,
    pub iptables: Option<IptablesCfg>,
    pub nftables: Option<NftablesCfg>,
    pub conntrack: Option<ConntrackCfg>,
    pub node_port_addresses: Option<Vec<String>>,
    pub healthz_bind_address: Option<String>,
    pub metrics_bind_address: Option<String>,
}

impl KubeProxyConfiguration {
    pub(crate) fn load(path: &Path) -> Result<KubeProxyConfiguration, ConfigFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let cfg: KubeProxyConfiguration =
            crate::yaml::from_str(&text).map_err(|source| ConfigFileError::Parse {
                path: path.to_path_buf(),
                source,
            })?;
        let invalid = |field: &str, reason: String| ConfigFileError::Invalid {
            path: path.to_path_buf(),
            field: field.to_string(),
            reason,
        };
        if let Some(kind) = cfg.kind.as_deref().filter(|k| *k != "KubeProxyConfiguration") {
            return Err(invalid(
                "kind",
                format!("{kind:?}, expected KubeProxyConfiguration"),
            ));
        }
        if let Some(mode) = cfg
            .mode
            .as_deref()
            .filter(|m| !["", "iptables", "nftables"].contains(m))
        {
            return Err(invalid(
                "mode",
                format!("{mode:?}: svcnet implements iptables and nftables"),
            ));
        }
        if let Some(ipt) = &cfg.iptables {
            for (field, v) in [
                ("iptables.minSyncPeriod", &ipt.min_sync_period),
                ("iptables.syncPeriod", &ipt.sync_period),
            ] {
                if let Some(v) = v {
                    parse_duration(v).map_err(|e| invalid(field, e))?;
                }
            }
        }
        if let Some(nft) = &cfg.nftables {
            for (field, v) in [
                ("nftables.minSyncPeriod", &nft.min_sync_period),
                ("nftables.syncPeriod", &nft.sync_period),
            ] {
                if let Some(v) = v {
                    parse_duration(v).map_err(|e| invalid(field, e))?;
                }
            }
        }
        Ok(cfg)
    }
}

/// Go duration syntax as kube-proxy accepts it: `1s`, `500ms`, `1m30s`, `1h`, `0.5s`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{text:?}: missing unit (s, ms, m, h)"))?;
        let (num, tail) = rest.split_at(num_len);
        let value: f64 = num.parse().map_err(|_| format!("{text:?}: bad number {num:?}"))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            other => return Err(format!("{text:?}: unknown unit {other:?}")),
        };
        total += value * scale;
        rest = next;
    }
    Duration::try_from_secs_f64(total).map_err(|e| format!("{text:?}: {e}"))
}

#[cfg(test)]
mod tests;
