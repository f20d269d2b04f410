//! The jump rules from built-in chains (INPUT, FORWARD, OUTPUT, PREROUTING, POSTROUTING) into svcnet's
//! chains. They are ensured separately from the payloads, like upstream, because a --noflush restore
//! cannot replace a single rule in a chain svcnet does not own.

use super::naming::*;
use crate::config::RenderConfig;

/// A rule in a built-in chain that sends traffic into svcnet's chains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jump {
    pub table: &'static str,
    pub chain: &'static str,
    /// Arguments without `-A/-I <chain>`.
    pub rule: String,
}

/// Upstream's iptablesJumpChains: (table, built-in chain, new connections only (`-m conntrack --ctstate
/// NEW`), comment, target), in upstream's order.
#[rustfmt::skip]
const JUMP_CHAINS: [(&str, &str, bool, &str, &str); 12] = [
    ("filter", "INPUT", true, "kubernetes externally-visible service portals", KUBE_EXTERNAL_SERVICES),
    ("filter", "FORWARD", true, "kubernetes externally-visible service portals", KUBE_EXTERNAL_SERVICES),
    ("filter", "INPUT", false, "kubernetes health check service ports", KUBE_NODEPORTS),
    ("filter", "FORWARD", true, "kubernetes service portals", KUBE_SERVICES),
    ("filter", "OUTPUT", true, "kubernetes service portals", KUBE_SERVICES),
    ("filter", "FORWARD", false, "kubernetes forwarding rules", KUBE_FORWARD),
    ("filter", "INPUT", true, "kubernetes load balancer firewall", KUBE_PROXY_FIREWALL),
    ("filter", "OUTPUT", true, "kubernetes load balancer firewall", KUBE_PROXY_FIREWALL),
    ("filter", "FORWARD", true, "kubernetes load balancer firewall", KUBE_PROXY_FIREWALL),
    ("nat", "OUTPUT", false, "kubernetes service portals", KUBE_SERVICES),
    ("nat", "PREROUTING", false, "kubernetes service portals", KUBE_SERVICES),
    ("nat", "POSTROUTING", false, "kubernetes postrouting rules", KUBE_POSTROUTING),
];

/// Upstream's iptablesJumpChains (and the kubelet KUBE-FIREWALL jumps when that chain is rendered).
pub fn jumps(cfg: &RenderConfig) -> Vec<Jump> {
    let mut out: Vec<Jump> = JUMP_CHAINS
        .iter()
        .map(|&(table, chain, new, comment, target)| Jump {
            table,
            chain,
            rule: format!(
                "{}-m comment --comment \"{comment}\" -j {target}",
                if new { "-m conntrack --ctstate NEW " } else { "" }
            ),
        })
        .collect();
    if cfg.effective_localhost_nodeports() {
        out.extend(kubelet_firewall_jumps());
    }
    out
}

/// What the daemon ensures at every full sync: [`jumps`] plus upstream's `iptablesKubeletJumpChains`
/// (kubelet's KUBE-FIREWALL chain and its INPUT and OUTPUT jumps), which kube-proxy ensures in every
/// family whether or not it writes the localhost-nodeport rule into that chain (an empty chain in
/// ip6tables, and in iptables without localhost NodePorts).
pub fn ensured_jumps(cfg: &RenderConfig) -> Vec<Jump> {
    let mut out = jumps(cfg);
    if !cfg.effective_localhost_nodeports() {
        out.extend(kubelet_firewall_jumps());
    }
    out
}

/// Upstream's iptablesKubeletJumpChains: filter INPUT and OUTPUT into kubelet's KUBE-FIREWALL chain.
/// [`jumps`] has them when it renders that chain, [`ensured_jumps`] always; one definition keeps the
/// two identical.
fn kubelet_firewall_jumps() -> impl Iterator<Item = Jump> {
    ["INPUT", "OUTPUT"].into_iter().map(|chain| Jump {
        table: "filter",
        chain,
        rule: format!("-j {KUBE_FIREWALL}"),
    })
}
