//! Settings checked once, at start: the flags (with a `--config` file laid over them, see
//! [`overlay`]) become plain typed values here. A bad flag stops `svcnet-proxy run` before anything
//! on the node is touched, and a sync never parses a flag string again.

mod overlay;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;
use k8s_openapi::api::core::v1::Node;
use thiserror::Error;

use crate::cli::{BackendArg, RuleArgs, RunArgs};
use crate::config::{
    DetectLocal, Layout, NftLayout, NodePortAddresses, ProxyMode, RenderConfig, check_interface,
};
use crate::config_file::ConfigFileError;
use crate::iptables::Backend;
use crate::model::{Family, NodeFacts};
use crate::sysctls::ConntrackArgs;

/// `nftables.masqueradeBit`'s default (kube-proxy's).
const NFTABLES_MASQUERADE_BIT: u32 = 14;

/// The port `--metrics-bind-address` gets when it names only an IP (kube-proxy's).
const METRICS_PORT: u16 = 10249;

#[derive(Debug, Error)]
pub enum SettingsError {
    /// A flag, or the `--config` field laid over it, has a value svcnet cannot use.
    #[error("invalid flags: {flag} {reason}")]
    Flag { flag: &'static str, reason: String },
    #[error(transparent)]
    ConfigFile(#[from] ConfigFileError),
    #[error("reading the hostname (set --hostname-override)")]
    Hostname(#[source] std::io::Error),
    #[error("empty node name: set --hostname-override")]
    EmptyNodeName,
}

fn flag_error(flag: &'static str, reason: impl Into<String>) -> SettingsError {
    SettingsError::Flag {
        flag,
        reason: reason.into(),
    }
}

/// The flags that change rule text, checked; what `render_config` needs besides the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleSettings {
    /// `DetectLocal::NodeCidr` is empty here: [`RuleSettings::render_config`] fills in the node's.
    pub local: DetectLocal,
    pub masquerade_all: bool,
    pub masquerade_bit: u32,
    pub nodeport_addresses: NodePortAddresses,
    pub localhost_nodeports: bool,
    pub layout: Layout,
    pub nft_layout: NftLayout,
    /// `--node-name` for the offline commands (empty: the input's first Node); the daemon puts the
    /// effective node name here.
    pub node_name: String,
    /// `--node-ip`: added to the Node's addresses.
    pub node_ips: Vec<IpAddr>,
    pub service_cidrs: Vec<IpNet>,
}

impl RuleSettings {
    /// `mode` picks the defaults that differ by mode: unset `--nodeport-addresses` is `primary` in
    /// nftables mode (upstream's platformApplyDefaults) and every local address in iptables mode.
    pub fn from_args(args: &RuleArgs, mode: ProxyMode) -> Result<RuleSettings, SettingsError> {
        let interface = |flag: &'static str, value: &Option<String>| {
            let Some(name) = value else {
                return Err(flag_error(
                    "--detect-local-mode",
                    format!("{} needs {flag}", args.detect_local_mode),
                ));
            };
            check_interface(name).map_err(|e| flag_error(flag, e.to_string()))?;
            Ok(name.clone())
        };
        let local = match args.detect_local_mode.as_str() {
            "ClusterCIDR" if args.cluster_cidr.is_empty() => DetectLocal::None,
            "ClusterCIDR" => DetectLocal::ClusterCidr(args.cluster_cidr.clone()),
            "NodeCIDR" => DetectLocal::NodeCidr(Vec::new()),
            "BridgeInterface" => {
                DetectLocal::BridgeInterface(interface("--pod-bridge-interface", &args.pod_bridge_interface)?)
            }
            "InterfaceNamePrefix" => DetectLocal::InterfaceNamePrefix(interface(
                "--pod-interface-name-prefix",
                &args.pod_interface_name_prefix,
            )?),
            other => {
                return Err(flag_error(
                    "--detect-local-mode",
                    format!(
                        "{other:?}: expected ClusterCIDR, NodeCIDR, BridgeInterface or InterfaceNamePrefix"
                    ),
                ));
            }
        };
        if args.iptables_masquerade_bit > 31 {
            return Err(flag_error(
                "--iptables-masquerade-bit",
                format!("{}: must be 0..=31", args.iptables_masquerade_bit),
            ));
        }
        // kube-proxy's nftables mode reads only `nftables.masqueradeBit` (NFTables.MasqueradeBit,
        // default 14); `--iptables-masquerade-bit` does not reach it.
        let masquerade_bit = match mode {
            ProxyMode::Iptables => args.iptables_masquerade_bit,
            ProxyMode::Nftables => args.nftables_masquerade_bit.unwrap_or(NFTABLES_MASQUERADE_BIT),
        };
        if masquerade_bit > 31 {
            return Err(flag_error(
                "--config",
                format!("nftables.masqueradeBit {masquerade_bit}: must be 0..=31"),
            ));
        }
        let mut nodeport_addresses = NodePortAddresses::parse(&args.nodeport_addresses)
            .map_err(|e| flag_error("--nodeport-addresses", e.to_string()))?;
        if mode == ProxyMode::Nftables && nodeport_addresses.is_unset() {
            nodeport_addresses.primary = true;
        }
        Ok(RuleSettings {
            local,
            masquerade_all: args.masquerade_all,
            masquerade_bit,
            nodeport_addresses,
            localhost_nodeports: args.iptables_localhost_nodeports,
            layout: args.layout,
            nft_layout: args.nftables_layout,
            node_name: args.node_name.clone(),
            node_ips: args.node_ip.clone(),
            service_cidrs: args.service_cidr.clone(),
        })
    }

    /// The render config of `family` on `node`, with the capabilities at their defaults (callers that
    /// detect them set them).
    pub fn render_config(&self, family: Family, node: &NodeFacts) -> RenderConfig {
        let detect_local = match &self.local {
            DetectLocal::NodeCidr(_) => DetectLocal::NodeCidr(node.pod_cidrs.clone()),
            other => other.clone(),
        };
        RenderConfig {
            family,
            layout: self.layout,
            nft_layout: self.nft_layout,
            detect_local,
            masquerade_all: self.masquerade_all,
            masquerade_bit: self.masquerade_bit,
            nodeport_addresses: self.nodeport_addresses.clone(),
            localhost_nodeports: self.localhost_nodeports,
            service_cidrs: self.service_cidrs.clone(),
            ..RenderConfig::default()
        }
    }

    /// This node's facts from its Node object (when known) and the node flags.
    pub fn node_facts(&self, node: Option<&Node>) -> NodeFacts {
        NodeFacts::with_flags(node, &self.node_name, &self.node_ips)
    }

    /// The Node among `nodes` these settings are about: the one named `--node-name`, else the first.
    pub fn pick_node<'a>(&self, nodes: &'a [Node]) -> Option<&'a Node> {
        nodes.iter().find(|n| {
            self.node_name.is_empty() || n.metadata.name.as_deref() == Some(self.node_name.as_str())
        })
    }
}

/// Everything `svcnet-proxy run` starts with, checked.
#[derive(Clone, Debug)]
pub struct RunSettings {
    pub kube: svcnet_core::kube_client::KubeArgs,
    pub log: svcnet_core::logging::LogArgs,
    /// `node_name` is the effective node name.
    pub rules: RuleSettings,
    pub mode: ProxyMode,
    pub min_sync_period: Duration,
    pub sync_period: Duration,
    /// `--service-sync-hold`.
    pub service_hold: Duration,
    /// `None`: the server is disabled.
    pub healthz_address: Option<SocketAddr>,
    pub metrics_address: Option<SocketAddr>,
    /// `None`: detect the backend that holds rules.
    pub backend: Option<Backend>,
    pub restore_timeout: Duration,
    /// [`crate::iptables::render::UNBATCHED`] for `--iptables-restore-max-chains 0`.
    pub restore_max_chains: usize,
    pub payload_dir: Option<PathBuf>,
    pub conntrack: ConntrackArgs,
    pub large_cluster_full_resync: bool,
}

impl RunSettings {
    /// Lays `--config` over the flags (the file wins, as in kube-proxy) and checks the result.
    pub fn from_args(mut args: RunArgs) -> Result<RunSettings, SettingsError> {
        overlay::apply_config_file(&mut args)?;
        let mut rules = RuleSettings::from_args(&args.rules, args.proxy_mode)?;
        let healthz_address = bind_address(
            "--healthz-bind-address",
            &args.healthz_bind_address,
            svcnet_core::service::HEALTHZ_PORT,
        )?;
        let metrics_address =
            bind_address("--metrics-bind-address", &args.metrics_bind_address, METRICS_PORT)?;
        rules.node_name = node_name(args.hostname_override.as_deref(), &args.rules.node_name)?;
        Ok(RunSettings {
            kube: args.kube,
            log: args.log,
            rules,
            mode: args.proxy_mode,
            min_sync_period: args.iptables_min_sync_period,
            sync_period: args.iptables_sync_period,
            service_hold: args.service_sync_hold,
            healthz_address,
            metrics_address,
            backend: backend(args.iptables_backend),
            restore_timeout: args.iptables_restore_timeout,
            restore_max_chains: match args.iptables_restore_max_chains {
                0 => crate::iptables::render::UNBATCHED,
                n => n,
            },
            payload_dir: args.write_payloads,
            conntrack: args.conntrack,
            large_cluster_full_resync: args.large_cluster_full_resync,
        })
    }
}

/// `--iptables-backend`: `None` lets the daemon pick the backend that already holds rules.
pub fn backend(arg: BackendArg) -> Option<Backend> {
    match arg {
        BackendArg::Auto => None,
        BackendArg::Nft => Some(Backend::Nft),
        BackendArg::Legacy => Some(Backend::Legacy),
    }
}

/// `""` disables a server; a bare IP gets the default port.
fn bind_address(
    flag: &'static str,
    text: &str,
    default_port: u16,
) -> Result<Option<SocketAddr>, SettingsError> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if let Ok(a) = t.parse::<SocketAddr>() {
        return Ok(Some(a));
    }
    let ip: IpAddr = t
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| flag_error(flag, format!("{t:?}: expected IP, IP:port or empty")))?;
    Ok(Some(SocketAddr::new(ip, default_port)))
}

/// The node name: --hostname-override, else --node-name, else the kernel hostname (lower-cased, as
/// upstream).
fn node_name(hostname_override: Option<&str>, node_name: &str) -> Result<String, SettingsError> {
    let name = match hostname_override.map(str::trim) {
        Some(h) if !h.is_empty() => h.to_string(),
        _ if !node_name.is_empty() => node_name.to_string(),
        _ => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map_err(SettingsError::Hostname)?
            .trim()
            .to_string(),
    };
    if name.is_empty() {
        return Err(SettingsError::EmptyNodeName);
    }
    Ok(name.to_lowercase())
}
