//! Command-line flags, and nothing else: the node agent (`run`), `cleanup`, and the offline debugging
//! subcommands (`render`, `trace`, `explain`). Flag names follow kube-proxy where the concept exists.
//! What the values mean is checked once, at start, by `settings` (which also lays a `--config` file
//! over them).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use ipnet::IpNet;

use crate::config::{Layout, NftLayout, NodeCaps, ProxyMode};
use crate::config_file::parse_duration;
use crate::iptables::render::DEFAULT_RESTORE_MAX_CHAINS;
use crate::model::ip::{parse_cidr_sloppy, parse_ip_sloppy};

#[derive(Parser, Debug)]
#[command(
    name = "svcnet-proxy",
    version,
    about = "Kubernetes Services as iptables or nftables rules (kube-proxy's iptables and nftables modes)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Run the node agent: watch Services/EndpointSlices and program iptables (kube-proxy iptables mode).
    Run(RunArgs),
    /// Remove every jump rule and chain svcnet installed (and nothing else), then exit.
    Cleanup(CleanupArgs),
    /// Print the iptables-restore payload for Services/EndpointSlices (and a Node) in a YAML file.
    Render(RenderArgs),
    /// Walk one packet through a saved ruleset (iptables-save output or a render payload).
    Trace(TraceArgs),
    /// Explain, in words, where packets to a Service go and why.
    Explain(ExplainArgs),
}

/// Flags that change the rules, shared by render and explain (and the daemon).
#[derive(Args, Debug, Clone)]
pub struct RuleArgs {
    /// Pod CIDR(s) of the cluster; with the default detect-local mode, off-cluster traffic to cluster
    /// IPs is masqueraded.
    #[arg(long, value_delimiter = ',', value_parser = cidr_arg)]
    pub cluster_cidr: Vec<IpNet>,
    /// ClusterCIDR, NodeCIDR, BridgeInterface or InterfaceNamePrefix.
    #[arg(long, default_value = "ClusterCIDR")]
    pub detect_local_mode: String,
    #[arg(long)]
    pub pod_bridge_interface: Option<String>,
    #[arg(long)]
    pub pod_interface_name_prefix: Option<String>,
    /// Masquerade all traffic sent to service cluster IPs.
    #[arg(long)]
    pub masquerade_all: bool,
    /// The masquerade mark bit of the iptables mode (the nftables mode takes `nftables.masqueradeBit`
    /// of `--config`, default 14, as kube-proxy).
    #[arg(long, default_value_t = 14)]
    pub iptables_masquerade_bit: u32,
    /// `nftables.masqueradeBit` of `--config` (no flag upstream either).
    #[arg(skip)]
    pub nftables_masquerade_bit: Option<u32>,
    /// CIDRs (or `primary`) of the node addresses that accept NodePort traffic; unset: every local
    /// address in iptables mode, `primary` in nftables mode (upstream's defaults).
    #[arg(long, value_delimiter = ',')]
    pub nodeport_addresses: Vec<String>,
    /// Accept NodePort connections on 127.0.0.1 (IPv4 only).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub iptables_localhost_nodeports: bool,
    /// flat: upstream-identical KUBE-SERVICES; tree: destination-prefix dispatch chains.
    #[arg(long, value_enum, default_value_t = Layout::Tree)]
    pub layout: Layout,
    /// nftables mode: upstream (upstream's table) or maps (a constant skeleton of rules, every
    /// service and endpoint fact a set or map element).
    #[arg(long, value_enum, default_value_t = NftLayout::Upstream)]
    pub nftables_layout: NftLayout,
    /// Node name (endpoint locality, topology); its Node object is read from the input when present.
    #[arg(long, default_value = "")]
    pub node_name: String,
    /// Node IP(s); added to those of the Node object.
    #[arg(long, value_parser = ip_arg)]
    pub node_ip: Vec<IpAddr>,
    /// The cluster's service CIDRs; nftables mode drops traffic to cluster IPs in them that no Service
    /// holds. Unset: `run` reads them from the ServiceCIDR objects (the offline commands have none).
    #[arg(long, value_delimiter = ',', value_parser = cidr_arg)]
    pub service_cidr: Vec<IpNet>,
}

/// Flags read addresses as upstream's sloppy parsers do (leading zeros allowed).
fn cidr_arg(s: &str) -> Result<IpNet, String> {
    parse_cidr_sloppy(s.trim()).ok_or_else(|| format!("{s:?} is not a CIDR"))
}

fn ip_arg(s: &str) -> Result<IpAddr, String> {
    parse_ip_sloppy(s.trim()).ok_or_else(|| format!("{s:?} is not an IP address"))
}

#[derive(Args, Debug)]
pub struct RenderArgs {
    /// Multi-document YAML with Services, EndpointSlices and optionally Nodes ("-" for stdin).
    #[arg(short = 'f', long = "filename")]
    pub file: PathBuf,
    /// Render the IPv6 (ip6tables / `ip6` table) ruleset instead of IPv4.
    #[arg(long)]
    pub ipv6: bool,
    /// iptables: the iptables-restore payload; nftables: the `kube-proxy` table as `nft -f` input.
    #[arg(long, value_enum, default_value_t = ProxyMode::Iptables)]
    pub proxy_mode: ProxyMode,
    /// Omit the jump rules from built-in chains (the daemon ensures those separately).
    #[arg(long)]
    pub no_jumps: bool,
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub caps: NodeCaps,
}

#[derive(Args, Debug)]
pub struct TraceArgs {
    /// iptables-save output or a render payload.
    #[arg(long)]
    pub rules: PathBuf,
    #[arg(long)]
    pub src: IpAddr,
    #[arg(long)]
    pub dst: IpAddr,
    #[arg(long)]
    pub dport: u16,
    #[arg(long, default_value = "tcp")]
    pub proto: String,
    /// The node's own addresses (for addrtype LOCAL).
    #[arg(long)]
    pub node_ip: Vec<IpAddr>,
    /// The packet is generated on the node itself (nat OUTPUT) instead of arriving (PREROUTING).
    #[arg(long)]
    pub from_node: bool,
    /// Interface the packet arrives on (for -i matches).
    #[arg(long)]
    pub in_iface: Option<String>,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[arg(short = 'f', long = "filename")]
    pub file: PathBuf,
    /// namespace/name of the Service.
    #[arg(long)]
    pub service: String,
    /// Which mode's rules to explain.
    #[arg(long, value_enum, default_value_t = ProxyMode::Iptables)]
    pub proxy_mode: ProxyMode,
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub caps: NodeCaps,
}

/// `--iptables-backend`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendArg {
    /// The backend that already holds rules (upstream iptables-wrapper logic).
    #[default]
    Auto,
    Nft,
    Legacy,
}

fn duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub kube: svcnet_core::kube_client::KubeArgs,
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub log: svcnet_core::logging::LogArgs,
    /// The node's name (default: the hostname); its Node object gives topology labels, podCIDR and IPs.
    #[arg(long)]
    pub hostname_override: Option<String>,
    /// iptables (KUBE-* chains through iptables-restore) or nftables (upstream's `kube-proxy` table).
    #[arg(long, value_enum, default_value_t = ProxyMode::Iptables)]
    pub proxy_mode: ProxyMode,
    /// Minimum time between two syncs (changes arriving sooner are batched).
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub iptables_min_sync_period: Duration,
    /// Maximum time between two syncs (periodic resync and canary check).
    #[arg(long, default_value = "30s", value_parser = duration_arg)]
    pub iptables_sync_period: Duration,
    /// How long a Service change's sync waits for the EndpointSlice change that usually follows it,
    /// so one sync carries both (svcnet; any endpoint change ends the wait at once; 0: no wait).
    #[arg(long, env = "SVCNET_SERVICE_SYNC_HOLD", default_value = "50ms", value_parser = duration_arg)]
    pub service_sync_hold: Duration,
    /// /healthz and /livez; empty disables.
    #[arg(long, default_value = "0.0.0.0:10256")]
    pub healthz_bind_address: String,
    /// /metrics; empty disables.
    #[arg(long, default_value = "127.0.0.1:10249")]
    pub metrics_bind_address: String,
    /// KubeProxyConfiguration file (subset, see docs/proxy-daemon.md); its values win over flags.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub iptables_backend: BackendArg,
    /// Kill an iptables-restore call that runs longer than this (svcnet; a wedged tool must not stall
    /// syncs forever, and the next sync after a failure is full).
    #[arg(long, default_value = "2m", value_parser = duration_arg)]
    pub iptables_restore_timeout: Duration,
    /// Write a sync that changes more chains than this in several iptables-restore calls, whole
    /// services first and KUBE-SERVICES last (svcnet; iptables-nft-restore slows quadratically with the
    /// chains in one call). 0 writes every sync in one call, like kube-proxy; so does the legacy
    /// backend, which rewrites whole tables at every call.
    #[arg(long, default_value_t = DEFAULT_RESTORE_MAX_CHAINS)]
    pub iptables_restore_max_chains: usize,
    /// Debug: also write every restore payload to DIR as NNNNNN-<ipv4|ipv6>-<full|partial>.rules
    /// (nftables mode: every transaction, as .nft).
    #[arg(long, value_name = "DIR")]
    pub write_payloads: Option<PathBuf>,
    #[command(flatten)]
    pub conntrack: crate::sysctls::ConntrackArgs,
    /// Keep the hourly full resync when the cluster has more than 1000 endpoints (kube-proxy 1.37
    /// skips it there: rewriting every chain of a large table is disruptive).
    #[arg(long)]
    pub large_cluster_full_resync: bool,
}

#[derive(Args, Debug, Clone)]
pub struct CleanupArgs {
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub iptables_backend: BackendArg,
    /// Remove only the chains upstream kube-proxy never writes (the tree layout's KUBE-DST-* and
    /// KUBE-EPG-*): what svcnet leaves behind once kube-proxy has taken the node over. Safe while
    /// kube-proxy runs; fails, changing nothing, while svcnet-proxy still jumps to them.
    #[arg(long)]
    pub only_svcnet_chains: bool,
}
