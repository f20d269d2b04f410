//! The part of the table every sync writes whatever the services (upstream's `setupNFTables`): hooked
//! base chains and the jumps out of them, the dispatch and check chains, masquerading, and the sets and
//! verdict maps the services fill.

use std::net::IpAddr;

use super::naming::*;
use super::{Chain, Element, Hook, Rule, Set, addr_type, family_word};
use crate::config::RenderConfig;
use crate::model::{Family, NodeFacts};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Base {
    pub chains: Vec<Chain>,
    pub sets: Vec<Set>,
    pub elements: Vec<Element>,
}

/// Hooked chains: name, type, hook, priority (knftables prints `dstnat-10` as -110, `dstnat` as -100,
/// `srcnat` as 100, `filter` as 0).
pub(super) const BASE_CHAINS: [(&str, &str, &str, i32); 8] = [
    (FILTER_PREROUTING_PRE_DNAT, "filter", "prerouting", -110),
    (FILTER_OUTPUT_PRE_DNAT, "filter", "output", -110),
    (FILTER_INPUT, "filter", "input", 0),
    (FILTER_FORWARD, "filter", "forward", 0),
    (FILTER_OUTPUT, "filter", "output", 0),
    (NAT_PREROUTING, "nat", "prerouting", -100),
    (NAT_OUTPUT, "nat", "output", -100),
    (NAT_POSTROUTING, "nat", "postrouting", 100),
];

/// (to, from, match): the jumps from base chains, in upstream's order. REJECT is only valid in input,
/// forward and output hooks on older kernels, hence the endpoints checks live there.
pub(super) const JUMPS: [(&str, &str, &str); 11] = [
    (NODEPORT_ENDPOINTS_CHECK, FILTER_INPUT, "ct state new "),
    (SERVICE_ENDPOINTS_CHECK, FILTER_INPUT, "ct state new "),
    (SERVICE_ENDPOINTS_CHECK, FILTER_FORWARD, "ct state new "),
    (SERVICE_ENDPOINTS_CHECK, FILTER_OUTPUT, "ct state new "),
    (FIREWALL_CHECK, FILTER_PREROUTING_PRE_DNAT, "ct state new "),
    (FIREWALL_CHECK, FILTER_OUTPUT_PRE_DNAT, "ct state new "),
    (SERVICES, NAT_OUTPUT, ""),
    (SERVICES, NAT_PREROUTING, ""),
    (MASQUERADING, NAT_POSTROUTING, ""),
    (CLUSTER_IPS_CHECK, FILTER_FORWARD, "ct state new "),
    (CLUSTER_IPS_CHECK, FILTER_OUTPUT, "ct state new "),
];

fn set(name: &str, type_: String, comment: &str, is_map: bool) -> Set {
    Set {
        name: name.into(),
        is_map,
        type_,
        comment: Some(comment.into()),
        ..Default::default()
    }
}

/// The node addresses in `nodeport-ips` (none when NodePorts answer on every local address).
/// Loopback never: nftables mode has no localhost NodePorts.
pub(super) fn nodeport_ips(node: &NodeFacts, cfg: &RenderConfig) -> Option<Vec<IpAddr>> {
    let npa = &cfg.nodeport_addresses;
    if npa.match_all(cfg.family) {
        return None;
    }
    let ips = npa.node_ips(cfg.family, &node.ips, &node.interface_ips);
    Some(ips.into_iter().filter(|ip| !ip.is_loopback()).collect())
}

pub(super) fn base(node: &NodeFacts, cfg: &RenderConfig) -> Base {
    let mut chains = declared_chains();
    let nodeport_ips = nodeport_ips(node, cfg);
    let mut add = |chain: &str, rule: Rule| {
        if let Some(c) = chains.iter_mut().find(|c| c.name == chain) {
            c.rules.push(rule);
        }
    };
    fixed_rules(cfg, &mut add);
    dispatch_rules(cfg, nodeport_ips.as_deref(), &mut add);
    let (sets, elements) = sets_and_elements(cfg, nodeport_ips);
    Base {
        chains,
        sets,
        elements,
    }
}

/// The hooked chains, the dispatch and check chains, and the reject helper, without rules.
fn declared_chains() -> Vec<Chain> {
    let mut chains: Vec<Chain> = BASE_CHAINS
        .iter()
        .map(|(name, kind, hook, priority)| Chain {
            hook: Some(Hook {
                kind,
                hook,
                priority: *priority,
            }),
            ..Chain::new(*name)
        })
        .collect();
    for name in [
        NODEPORT_ENDPOINTS_CHECK,
        SERVICE_ENDPOINTS_CHECK,
        FIREWALL_CHECK,
        SERVICES,
        MASQUERADING,
        CLUSTER_IPS_CHECK,
        MARK_MASQ,
    ] {
        chains.push(Chain::new(name));
    }
    chains.push(Chain {
        comment: Some("helper for @no-endpoint-services / @no-endpoint-nodeports".into()),
        ..Chain::new(REJECT_CHAIN)
    });
    chains
}

/// The jumps out of the hooked chains, masquerading and the cluster-IP checks.
fn fixed_rules(cfg: &RenderConfig, add: &mut dyn FnMut(&str, Rule)) {
    let ip = family_word(cfg.family);
    let mark = cfg.masq_mark();
    for (to, from, m) in JUMPS {
        add(from, Rule::new(format!("{m}jump {to}")));
    }
    add(MARK_MASQ, Rule::new(format!("mark set mark or {mark}")));
    add(MASQUERADING, Rule::new(format!("mark and {mark} == 0 return")));
    add(MASQUERADING, Rule::new(format!("mark set mark xor {mark}")));
    add(MASQUERADING, Rule::new("masquerade fully-random"));
    add(
        CLUSTER_IPS_CHECK,
        Rule::commented(
            format!("{ip} daddr @{CLUSTER_IPS} reject"),
            "Reject traffic to invalid ports of ClusterIPs",
        ),
    );
    let cidrs: Vec<String> = cfg
        .service_cidrs
        .iter()
        .filter(|c| cfg.family.matches(&c.addr()))
        .map(|c| c.trunc().to_string())
        .collect();
    if !cidrs.is_empty() {
        add(
            CLUSTER_IPS_CHECK,
            Rule::commented(
                format!("{ip} daddr {{ {} }} drop", cidrs.join(",")),
                "Drop traffic to unallocated ClusterIPs",
            ),
        );
    }
    add(REJECT_CHAIN, Rule::new("reject"));
    add(
        SERVICE_ENDPOINTS_CHECK,
        Rule::new(format!(
            "{ip} daddr . meta l4proto . th dport vmap @{NO_ENDPOINT_SERVICES}"
        )),
    );
}

/// The dispatch chains' verdict-map lookups (services, NodePorts, firewall, no-endpoint checks).
fn dispatch_rules(cfg: &RenderConfig, nodeport_ips: Option<&[IpAddr]>, add: &mut dyn FnMut(&str, Rule)) {
    let ip = family_word(cfg.family);
    let no_localhost = match cfg.family {
        Family::V4 => "ip daddr != 127.0.0.0/8",
        Family::V6 => "ip6 daddr != ::1",
    };
    let nodeport_match = match nodeport_ips {
        None => no_localhost.to_string(),
        Some(_) => format!("{ip} daddr @{NODEPORT_IPS}"),
    };
    add(
        NODEPORT_ENDPOINTS_CHECK,
        Rule::new(format!(
            "{nodeport_match} meta l4proto . th dport vmap @{NO_ENDPOINT_NODEPORTS}"
        )),
    );
    add(
        FIREWALL_CHECK,
        Rule::new(format!(
            "{ip} daddr . meta l4proto . th dport vmap @{FIREWALL_IPS}"
        )),
    );
    add(
        SERVICES,
        Rule::new(format!(
            "{ip} daddr . meta l4proto . th dport vmap @{SERVICE_IPS}"
        )),
    );
    let services_nodeport_match = match nodeport_ips {
        None => format!("fib daddr type local {no_localhost}"),
        Some(_) => nodeport_match,
    };
    add(
        SERVICES,
        Rule::new(format!(
            "{services_nodeport_match} meta l4proto . th dport vmap @{SERVICE_NODEPORTS}"
        )),
    );
}

/// The shared sets and verdict maps, and the node's NodePort addresses.
fn sets_and_elements(cfg: &RenderConfig, nodeport_ips: Option<Vec<IpAddr>>) -> (Vec<Set>, Vec<Element>) {
    let addr = addr_type(cfg.family);
    let by_addr = format!("{addr} . inet_proto . inet_service : verdict");
    let by_port = "inet_proto . inet_service : verdict".to_string();
    let mut sets = vec![
        set(CLUSTER_IPS, addr.into(), "Active ClusterIPs", false),
        set(
            NO_ENDPOINT_SERVICES,
            by_addr.clone(),
            "vmap to drop or reject packets to services with no endpoints",
            true,
        ),
        set(
            NO_ENDPOINT_NODEPORTS,
            by_port.clone(),
            "vmap to drop or reject packets to service nodeports with no endpoints",
            true,
        ),
        set(
            FIREWALL_IPS,
            by_addr.clone(),
            "destinations that are subject to LoadBalancerSourceRanges",
            true,
        ),
        set(
            SERVICE_IPS,
            by_addr,
            "ClusterIP, ExternalIP and LoadBalancer IP traffic",
            true,
        ),
        set(SERVICE_NODEPORTS, by_port, "NodePort traffic", true),
    ];
    let mut elements = Vec::new();
    if let Some(ips) = nodeport_ips {
        sets.push(set(
            NODEPORT_IPS,
            addr.into(),
            "IPs that accept NodePort traffic",
            false,
        ));
        elements.extend(ips.into_iter().map(|ip| Element {
            container: NODEPORT_IPS,
            key: vec![ip.to_string()],
            value: None,
            comment: None,
        }));
    }
    (sets, elements)
}
