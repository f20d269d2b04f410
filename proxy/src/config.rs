//! Render-time configuration: the kube-proxy flags that change rule text, as plain values (the
//! enums double as flag values).

use std::net::IpAddr;

use ipnet::IpNet;

use crate::model::ip::parse_cidr_sloppy;
use thiserror::Error;

use crate::model::Family;

/// How KUBE-SERVICES is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// Upstream-identical: one linear KUBE-SERVICES list.
    Flat,
    /// Destination-prefix dispatch chains (KUBE-DST-*), O(log services) rules per new connection.
    #[default]
    Tree,
}

/// `--nftables-layout`: how the nftables mode's `kube-proxy` table is shaped (the counterpart of
/// [`Layout`] in the iptables mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum NftLayout {
    /// Upstream's table: a chain per service port and per endpoint, verdict maps to them.
    #[default]
    Upstream,
    /// A constant skeleton of rules; every per-service and per-endpoint fact is a set or map element
    /// (docs/nftables-maps.md).
    Maps,
}

/// `--proxy-mode`: which netfilter interface the rules are written for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProxyMode {
    #[default]
    Iptables,
    Nftables,
}

/// `--detect-local-mode`: how "traffic from a local pod" is recognised, from the flag (checked by
/// `settings`) to the renderers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DetectLocal {
    /// No detection (upstream's no-op detector): no masquerade of off-cluster traffic to cluster IPs;
    /// also ClusterCIDR mode without `--cluster-cidr`.
    None,
    ClusterCidr(Vec<IpNet>),
    /// The Node's podCIDRs: empty in the settings, filled in per render once the Node is known.
    NodeCidr(Vec<IpNet>),
    BridgeInterface(String),
    InterfaceNamePrefix(String),
}

/// What the node's netfilter can do, as far as the rules care: detected by the daemon at start, and
/// given to the offline commands as flags (they assume a current node unless told otherwise).
#[derive(clap::Args, Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeCaps {
    /// iptables >= 1.6.2: MASQUERADE gets `--random-fully`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub random_fully: bool,
    /// The nfacct counters exist: the INVALID drop and localhost NodePort rules feed them.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub nfacct: bool,
    /// nf_conntrack_tcp_be_liberal is set: no INVALID drop rule. Only detected (no flag: off).
    #[arg(skip)]
    pub tcp_liberal: bool,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("--iptables-masquerade-bit {0}: must be 0..=31")]
    MasqueradeBit(u32),
    #[error("interface name {0:?}: must be 1-15 characters of [A-Za-z0-9_.-]")]
    Interface(String),
    #[error("--nodeport-addresses {0:?}: expected CIDRs or \"primary\"")]
    NodePortAddress(String),
}

/// A validated interface name (it goes into rule text).
pub fn check_interface(name: &str) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && name.len() <= 15
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ConfigError::Interface(name.to_string()))
    }
}

/// `--nodeport-addresses`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodePortAddresses {
    pub cidrs: Vec<IpNet>,
    pub primary: bool,
}

impl NodePortAddresses {
    pub fn parse(values: &[String]) -> Result<Self, ConfigError> {
        let mut out = NodePortAddresses::default();
        for v in values
            .iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|v| !v.is_empty())
        {
            if v == "primary" {
                out.primary = true;
            } else {
                out.cidrs
                    .push(parse_cidr_sloppy(v).ok_or_else(|| ConfigError::NodePortAddress(v.to_string()))?);
            }
        }
        Ok(out)
    }

    /// Neither CIDRs nor `primary` given.
    pub fn is_unset(&self) -> bool {
        self.cidrs.is_empty() && !self.primary
    }

    /// Upstream `MatchAll`: no restriction for this family.
    pub fn match_all(&self, family: Family) -> bool {
        let fam: Vec<&IpNet> = self.cidrs.iter().filter(|c| family.matches(&c.addr())).collect();
        (!self.primary && fam.is_empty()) || fam.iter().any(|c| c.prefix_len() == 0)
    }

    pub fn contains_ipv4_loopback(&self) -> bool {
        self.match_all(Family::V4)
            || self
                .cidrs
                .iter()
                .any(|c| c.contains(&IpAddr::from([127, 0, 0, 1])))
    }

    /// The node addresses NodePorts answer on when not `match_all`. `primary` is the node's first IP
    /// of the family (upstream turns it into that one address's /32 or /128, from its NodeIPs: one per
    /// family), not every InternalIP.
    pub fn node_ips(&self, family: Family, primary: &[IpAddr], interfaces: &[IpAddr]) -> Vec<IpAddr> {
        let mut out: Vec<IpAddr> = Vec::new();
        if self.primary {
            out.extend(primary.iter().find(|ip| family.matches(ip)));
        }
        for ip in interfaces.iter().chain([IpAddr::from([127, 0, 0, 1])].iter()) {
            if family.matches(ip) && self.cidrs.iter().any(|c| c.contains(ip)) {
                out.push(*ip);
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderConfig {
    pub family: Family,
    pub layout: Layout,
    pub nft_layout: NftLayout,
    pub detect_local: DetectLocal,
    pub masquerade_all: bool,
    pub masquerade_bit: u32,
    pub nodeport_addresses: NodePortAddresses,
    pub localhost_nodeports: bool,
    /// `MASQUERADE --random-fully` (detected from the iptables binary by the daemon).
    pub random_fully: bool,
    /// The nfacct counters exist (the daemon creates them): the INVALID drop and localhost NodePort
    /// rules feed them, as upstream's.
    pub nfacct: bool,
    /// nf_conntrack_tcp_be_liberal set: no INVALID drop rule.
    pub conntrack_tcp_liberal: bool,
    /// Leaf size of the dispatch tree (tree layout).
    pub tree_leaf_max: usize,
    /// The cluster's service CIDRs (ServiceCIDR objects); nftables mode drops traffic to unallocated
    /// cluster IPs in them. Unused by the iptables rules.
    pub service_cidrs: Vec<IpNet>,
}

impl Default for RenderConfig {
    fn default() -> Self {
        RenderConfig {
            family: Family::V4,
            layout: Layout::Tree,
            nft_layout: NftLayout::Upstream,
            detect_local: DetectLocal::None,
            masquerade_all: false,
            masquerade_bit: 14,
            nodeport_addresses: NodePortAddresses::default(),
            localhost_nodeports: true,
            random_fully: true,
            // Counters are kernel objects someone must create first (the daemon does, when it can).
            nfacct: false,
            conntrack_tcp_liberal: false,
            tree_leaf_max: 8,
            service_cidrs: Vec::new(),
        }
    }
}

impl RenderConfig {
    /// Takes the node's capabilities (the renderers read them as these three fields).
    pub fn set_caps(&mut self, caps: NodeCaps) {
        self.random_fully = caps.random_fully;
        self.nfacct = caps.nfacct;
        self.conntrack_tcp_liberal = caps.tcp_liberal;
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.masquerade_bit > 31 {
            return Err(ConfigError::MasqueradeBit(self.masquerade_bit));
        }
        match &self.detect_local {
            DetectLocal::BridgeInterface(i) | DetectLocal::InterfaceNamePrefix(i) => check_interface(i),
            _ => Ok(()),
        }
    }

    /// The masquerade mark as iptables-save prints it (`0x4000` for bit 14).
    pub fn masq_mark(&self) -> String {
        format!("{:#x}", 1u64 << self.masquerade_bit)
    }

    /// Localhost NodePorts only exist for IPv4 and when loopback is within --nodeport-addresses.
    pub fn effective_localhost_nodeports(&self) -> bool {
        self.family == Family::V4
            && self.localhost_nodeports
            && self.nodeport_addresses.contains_ipv4_loopback()
    }

    /// `(if_local, if_not_local)` argument strings, or `None` when no detector is configured.
    pub fn local_detector(&self) -> Option<(String, String)> {
        let fam = |cidrs: &Vec<IpNet>| cidrs.iter().find(|c| self.family.matches(&c.addr())).copied();
        match &self.detect_local {
            DetectLocal::None => None,
            DetectLocal::ClusterCidr(c) | DetectLocal::NodeCidr(c) => {
                fam(c).map(|c| (format!("-s {}", c.trunc()), format!("! -s {}", c.trunc())))
            }
            DetectLocal::BridgeInterface(i) => Some((format!("-i {i}"), format!("! -i {i}"))),
            DetectLocal::InterfaceNamePrefix(i) => Some((format!("-i {i}+"), format!("! -i {i}+"))),
        }
    }
}
