//! Command line: the node agent (`run`), `cleanup`, and offline debugging subcommands (`render`,
//! `trace`, `explain`). Flag names follow kube-proxy where the concept exists.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use ipnet::IpNet;

use crate::config::{DetectLocal, Layout, NodePortAddresses, RenderConfig};
use crate::input::{Objects, node_facts, parse_objects};
use crate::model::ip::{parse_cidr_sloppy, parse_ip_sloppy};
use crate::model::{Family, NodeFacts, ProxyState};
use crate::render::{FullOptions, render};
use crate::trace;

#[derive(Parser, Debug)]
#[command(
    name = "svcnet-proxy",
    version,
    about = "Kubernetes Services as iptables rules (kube-proxy iptables mode)"
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
    #[arg(long, default_value_t = 14)]
    pub iptables_masquerade_bit: u32,
    /// CIDRs (or `primary`) of the node addresses that accept NodePort traffic; empty = all.
    #[arg(long, value_delimiter = ',')]
    pub nodeport_addresses: Vec<String>,
    /// Accept NodePort connections on 127.0.0.1 (IPv4 only).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub iptables_localhost_nodeports: bool,
    /// flat: upstream-identical KUBE-SERVICES; tree: destination-prefix dispatch chains.
    #[arg(long, value_enum, default_value_t = Layout::Tree)]
    pub layout: Layout,
    /// Node name (endpoint locality, topology); its Node object is read from the input when present.
    #[arg(long, default_value = "")]
    pub node_name: String,
    /// Node IP(s); added to those of the Node object.
    #[arg(long, value_parser = ip_arg)]
    pub node_ip: Vec<IpAddr>,
    /// The cluster's service CIDRs (what ServiceCIDR objects say); nftables mode drops traffic to
    /// cluster IPs in them that no Service holds.
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

impl RuleArgs {
    pub fn render_config(&self, family: Family, node: &NodeFacts) -> Result<RenderConfig> {
        let detect_local = match self.detect_local_mode.as_str() {
            "ClusterCIDR" if self.cluster_cidr.is_empty() => DetectLocal::None,
            "ClusterCIDR" => DetectLocal::ClusterCidr(self.cluster_cidr.clone()),
            "NodeCIDR" => DetectLocal::NodeCidr(node.pod_cidrs.clone()),
            "BridgeInterface" => DetectLocal::BridgeInterface(
                self.pod_bridge_interface
                    .clone()
                    .context("--detect-local-mode BridgeInterface needs --pod-bridge-interface")?,
            ),
            "InterfaceNamePrefix" => DetectLocal::InterfaceNamePrefix(
                self.pod_interface_name_prefix
                    .clone()
                    .context("--detect-local-mode InterfaceNamePrefix needs --pod-interface-name-prefix")?,
            ),
            other => bail!(
                "--detect-local-mode {other:?}: expected ClusterCIDR, NodeCIDR, BridgeInterface or InterfaceNamePrefix"
            ),
        };
        let cfg = RenderConfig {
            family,
            layout: self.layout,
            detect_local,
            masquerade_all: self.masquerade_all,
            masquerade_bit: self.iptables_masquerade_bit,
            nodeport_addresses: NodePortAddresses::parse(&self.nodeport_addresses)?,
            localhost_nodeports: self.iptables_localhost_nodeports,
            service_cidrs: self.service_cidr.clone(),
            ..RenderConfig::default()
        };
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn node_facts(&self, objects: &Objects) -> NodeFacts {
        let mut facts = objects
            .nodes
            .iter()
            .find(|n| {
                n.metadata.name.as_deref() == Some(self.node_name.as_str()) || self.node_name.is_empty()
            })
            .map(node_facts)
            .unwrap_or_default();
        if !self.node_name.is_empty() {
            facts.name = self.node_name.clone();
        }
        for ip in &self.node_ip {
            if !facts.ips.contains(ip) {
                facts.ips.push(*ip);
                facts.interface_ips.push(*ip);
            }
        }
        facts
    }
}

/// What the node's iptables and kernel support, which the daemon detects; `render` and `explain`
/// assume a current node unless told otherwise.
#[derive(Args, Debug, Clone, Copy)]
pub struct NodeCaps {
    /// iptables >= 1.6.2: MASQUERADE gets `--random-fully`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub random_fully: bool,
    /// The nfacct counters exist: the INVALID drop and localhost NodePort rules feed them.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub nfacct: bool,
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

fn read(path: &PathBuf) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        return Ok(s);
    }
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Loads objects and builds the model for one family; model errors are printed as warnings.
pub fn load(
    file: &PathBuf,
    rules: &RuleArgs,
    caps: NodeCaps,
    family: Family,
) -> Result<(Objects, NodeFacts, ProxyState, RenderConfig)> {
    let objects = parse_objects(&read(file)?).with_context(|| format!("parsing {}", file.display()))?;
    let node = rules.node_facts(&objects);
    let mut cfg = rules.render_config(family, &node)?;
    cfg.random_fully = caps.random_fully;
    cfg.nfacct = caps.nfacct;
    let state = ProxyState::from_k8s(&objects.services, &objects.slices, family);
    for e in &state.errors {
        eprintln!("warning: {e}");
    }
    Ok((objects, node, state, cfg))
}

/// `--proxy-mode`: which ruleset `render` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProxyMode {
    #[default]
    Iptables,
    Nftables,
}

pub fn run_render(args: &RenderArgs) -> Result<String> {
    let family = if args.ipv6 { Family::V6 } else { Family::V4 };
    let (_, node, state, cfg) = load(&args.file, &args.rules, args.caps, family)?;
    if args.proxy_mode == ProxyMode::Nftables {
        return Ok(crate::nft::render(&state, &node, &cfg).text());
    }
    let rendered = render(&state, &node, &cfg);
    let opts = FullOptions {
        jumps: !args.no_jumps,
        canaries: false,
        ..Default::default()
    };
    Ok(rendered.payload(&opts, &cfg).0)
}

pub fn run_trace(args: &TraceArgs) -> Result<String> {
    let text = read(&args.rules)?;
    let proto: trace::Proto = args
        .proto
        .parse()
        .map_err(|e: trace::UnknownProto| anyhow::anyhow!("--proto: {}", e.0))?;
    let packet = trace::Packet {
        src: args.src,
        dst: args.dst,
        dport: args.dport,
        proto,
        in_iface: args.in_iface.clone(),
    };
    let opts = trace::TraceOptions {
        node_ips: args.node_ip.clone(),
        hook: if args.from_node {
            trace::Hook::Output
        } else {
            trace::Hook::Prerouting
        },
    };
    // Either mode's rules: an nftables table (render output or `nft list table`) or iptables-save text.
    let t = if trace::nft::is_nft(&text) {
        let ruleset =
            trace::nft::parse(&text).with_context(|| format!("parsing {}", args.rules.display()))?;
        trace::nft::trace(&ruleset, &packet, &opts)
    } else {
        let ruleset = trace::parse(&text).with_context(|| format!("parsing {}", args.rules.display()))?;
        trace::trace(&ruleset, &packet, &opts)
    };
    Ok(format!(
        "packet {} {}:{} -> {}:{}\n{t}",
        args.proto, args.src, "*", args.dst, args.dport
    ))
}

pub fn run_explain(args: &ExplainArgs) -> Result<String> {
    crate::explain::explain(&args.file, &args.service, &args.rules, args.caps, args.proxy_mode)
}

pub fn main() -> Result<()> {
    let cli = Cli::parse();
    let out = match &cli.command {
        Command::Run(a) => return crate::daemon::main(a.clone()),
        Command::Cleanup(a) => run_cleanup(a)?,
        Command::Render(a) => run_render(a)?,
        Command::Trace(a) => run_trace(a)?,
        Command::Explain(a) => run_explain(a)?,
    };
    print!("{out}");
    Ok(())
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

impl BackendArg {
    pub fn forced(self) -> Option<crate::iptables::Backend> {
        match self {
            BackendArg::Auto => None,
            BackendArg::Nft => Some(crate::iptables::Backend::Nft),
            BackendArg::Legacy => Some(crate::iptables::Backend::Legacy),
        }
    }
}

fn duration_arg(s: &str) -> Result<Duration, String> {
    crate::config_file::parse_duration(s)
}

/// `--iptables-restore-max-chains` default: one call stays near 0.35 s with iptables-nft 1.8.9 (5k
/// chains with jumps, measured in a netns; 10k took 1 s, 20k 3.6 s). Into a table that already holds a
/// large ruleset every call also pays a fixed cost (the restore's chain cache and the kernel's validation
/// of the whole table, ~0.3 s each at 10k services), so fewer, larger calls win there: a full sync over
/// 10k services / 100k endpoints restored in 29.6 s with 5000 chains per call, 40.8 s with 1000.
pub const DEFAULT_RESTORE_MAX_CHAINS: usize = 5000;

/// Batch size of a full sync into a table svcnet has not written yet (no KUBE-PROXY-CANARY: a fresh node):
/// new chains are unreferenced until the last call, so calls are cheap and only the quadratic cost per
/// call counts. First sync at 10k services / 100k endpoints (svcnet-bench P4): 250 chains per call 12.7 s,
/// 500 10.0 s, 1000 9.8 s, 2000 11.8 s, 5000 16-20 s.
pub const FRESH_TABLE_MAX_CHAINS: usize = 1000;

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
    /// Minimum time between two syncs (changes arriving sooner are batched).
    /// iptables (KUBE-* chains through iptables-restore) or nftables (upstream's `kube-proxy` table).
    #[arg(long, value_enum, default_value_t = ProxyMode::Iptables)]
    pub proxy_mode: ProxyMode,
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub iptables_min_sync_period: Duration,
    /// Maximum time between two syncs (periodic resync and canary check).
    #[arg(long, default_value = "30s", value_parser = duration_arg)]
    pub iptables_sync_period: Duration,
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
    /// chains in one call). 0 writes every sync in one call, like kube-proxy.
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

impl RunArgs {
    /// Applies `--config` over the flags (kube-proxy: the file wins).
    pub fn apply_config_file(&mut self) -> Result<()> {
        let Some(path) = self.config.clone() else {
            return Ok(());
        };
        let f = crate::config_file::KubeProxyConfiguration::load(&path)?;
        if let Some(k) = f
            .client_connection
            .and_then(|c| c.kubeconfig)
            .filter(|k| !k.is_empty())
        {
            self.kube.kubeconfig = Some(PathBuf::from(k));
        }
        if let Some(h) = f.hostname_override.filter(|h| !h.is_empty()) {
            self.hostname_override = Some(h);
        }
        if let Some(c) = f.cluster_cidr.filter(|c| !c.is_empty()) {
            self.rules.cluster_cidr = c
                .split(',')
                .map(|c| {
                    parse_cidr_sloppy(c.trim())
                        .with_context(|| format!("{}: clusterCIDR {c:?} is not a CIDR", path.display()))
                })
                .collect::<Result<_>>()?;
        }
        if let Some(m) = f.detect_local_mode.filter(|m| !m.is_empty()) {
            self.rules.detect_local_mode = m;
        }
        if let Some(d) = f.detect_local {
            if let Some(b) = d.bridge_interface.filter(|b| !b.is_empty()) {
                self.rules.pod_bridge_interface = Some(b);
            }
            if let Some(p) = d.interface_name_prefix.filter(|p| !p.is_empty()) {
                self.rules.pod_interface_name_prefix = Some(p);
            }
        }
        if let Some(c) = f.conntrack {
            c.apply_to(&mut self.conntrack)
                .map_err(|e| anyhow::anyhow!("{}: conntrack.{e}", path.display()))?;
        }
        if let Some(m) = f.mode.as_deref() {
            self.proxy_mode = match m {
                "nftables" => ProxyMode::Nftables,
                _ => ProxyMode::Iptables,
            };
        }
        if let Some(n) = f.nftables.filter(|_| self.proxy_mode == ProxyMode::Nftables) {
            if let Some(v) = n.masquerade_all {
                self.rules.masquerade_all = v;
            }
            if let Some(v) = n.masquerade_bit {
                self.rules.iptables_masquerade_bit = v;
            }
            if let Some(v) = n.min_sync_period {
                self.iptables_min_sync_period = duration_arg(&v).map_err(anyhow::Error::msg)?;
            }
            if let Some(v) = n.sync_period {
                self.iptables_sync_period = duration_arg(&v).map_err(anyhow::Error::msg)?;
            }
        }
        if let Some(i) = f.iptables.filter(|_| self.proxy_mode == ProxyMode::Iptables) {
            if let Some(v) = i.masquerade_all {
                self.rules.masquerade_all = v;
            }
            if let Some(v) = i.masquerade_bit {
                self.rules.iptables_masquerade_bit = v;
            }
            if let Some(v) = i.localhost_node_ports {
                self.rules.iptables_localhost_nodeports = v;
            }
            if let Some(v) = i.min_sync_period {
                self.iptables_min_sync_period = duration_arg(&v).map_err(anyhow::Error::msg)?;
            }
            if let Some(v) = i.sync_period {
                self.iptables_sync_period = duration_arg(&v).map_err(anyhow::Error::msg)?;
            }
        }
        if let Some(n) = f.node_port_addresses {
            self.rules.nodeport_addresses = n;
        }
        if let Some(a) = f.healthz_bind_address {
            self.healthz_bind_address = a;
        }
        if let Some(a) = f.metrics_bind_address {
            self.metrics_bind_address = a;
        }
        Ok(())
    }
}

#[derive(Args, Debug, Clone)]
pub struct CleanupArgs {
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub iptables_backend: BackendArg,
}

pub fn run_cleanup(args: &CleanupArgs) -> Result<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async {
        let backend = crate::iptables::detect_backend(args.iptables_backend.forced()).await;
        let mut out = String::new();
        for family in [Family::V4, Family::V6] {
            let ipt = crate::iptables::Iptables::new(family, backend);
            if let Err(e) = ipt.check().await {
                out.push_str(&format!("{e}: skipped\n"));
                continue;
            }
            let removed = crate::cleanup::cleanup(&ipt)
                .await
                .with_context(|| format!("cleaning up {}", family.label()))?;
            out.push_str(&format!(
                "{}: removed {} jump rules and {} chains\n",
                family.label(),
                removed.jumps,
                removed.chains.len()
            ));
            for c in removed.chains {
                out.push_str(&format!("  {c}\n"));
            }
        }
        // Both modes' rules go, as `kube-proxy --cleanup` does.
        for family in [Family::V4, Family::V6] {
            match crate::nft_sync::cleanup(family).await {
                Ok(true) => out.push_str(&format!(
                    "{}: removed the nftables kube-proxy table\n",
                    family.label()
                )),
                Ok(false) => {}
                Err(e) => out.push_str(&format!("{e}: nftables skipped\n")),
            }
        }
        Ok(out)
    })
}
