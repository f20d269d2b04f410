//! One service port's part of the table, following the per-service loop of upstream's nftables
//! `syncProxyRules`: its elements in the shared sets and verdict maps, its own chains (cluster and
//! local policy, external, firewall, one per endpoint) and, with ClientIP affinity, one timeout set
//! per endpoint.

use std::fmt::Write as _;

use super::naming::*;
use super::{Chain, Element, Rule, Set, addr_type, family_word};
use crate::config::{DetectLocal, RenderConfig};
use crate::model::{Categorized, Endpoint, NodeFacts, ServicePort, categorize};

/// What one service port adds to the table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceObjects {
    /// Elements of the shared sets and maps (cluster-ips, service-ips, ...).
    pub elements: Vec<Element>,
    /// Chains this port owns, with their rules.
    pub chains: Vec<Chain>,
    /// Affinity sets this port owns.
    pub sets: Vec<Set>,
    /// For metrics: no local endpoints for internal / external traffic.
    pub no_local_internal: bool,
    pub no_local_external: bool,
}

pub(super) struct Ctx<'a> {
    pub cfg: &'a RenderConfig,
    pub node: &'a NodeFacts,
    /// `ip`/`ip6`.
    ip: &'static str,
    /// (if local, if not local) matches of the local-traffic detector, as upstream's `IfLocalNFT`.
    local_detector: Option<(String, String)>,
}

/// Upstream's `IfLocalNFT` / `IfNotLocalNFT` for the configured mode and family.
pub(super) fn local_detector(cfg: &RenderConfig) -> Option<(String, String)> {
    let ip = family_word(cfg.family);
    match &cfg.detect_local {
        DetectLocal::None => None,
        DetectLocal::ClusterCidr(c) | DetectLocal::NodeCidr(c) => {
            c.iter().find(|c| cfg.family.matches(&c.addr())).map(|c| {
                (
                    format!("{ip} saddr {}", c.trunc()),
                    format!("{ip} saddr != {}", c.trunc()),
                )
            })
        }
        // Interface names are checked in config (`check_interface`): no quoting needed.
        DetectLocal::BridgeInterface(i) => Some((format!("iifname {i}"), format!("iifname != {i}"))),
        DetectLocal::InterfaceNamePrefix(i) => Some((format!("iifname {i}*"), format!("iifname != {i}*"))),
    }
}

impl<'a> Ctx<'a> {
    pub(super) fn new(node: &'a NodeFacts, cfg: &'a RenderConfig) -> Ctx<'a> {
        Ctx {
            cfg,
            node,
            ip: family_word(cfg.family),
            local_detector: local_detector(cfg),
        }
    }

    pub(super) fn render(&self, svc: &ServicePort, endpoints: &[Endpoint]) -> ServiceObjects {
        render_service_port(svc, &categorize(endpoints, svc, self.node), self)
    }
}

/// The decisions upstream takes before writing anything for a service port.
struct Plan {
    names: ServiceNames,
    /// `ns/name:port`, the comment of no-endpoint elements.
    comment: String,
    proto: &'static str,
    has_endpoints: bool,
    has_internal: bool,
    has_external: bool,
    uses_cluster_chain: bool,
    uses_local_chain: bool,
    uses_external_chain: bool,
    uses_firewall_chain: bool,
    internal_verdict: String,
    external_verdict: String,
}

impl Plan {
    fn new(svc: &ServicePort, cat: &Categorized) -> Plan {
        let has_endpoints = cat.has_any;
        let has_local = !cat.local.is_empty();
        let has_internal = has_endpoints && (!svc.internal_policy_local || has_local);
        let has_external = has_endpoints && (!svc.external_policy_local || has_local);
        let verdict = |has: bool| {
            if !has_endpoints {
                format!("goto {REJECT_CHAIN}")
            } else if has {
                String::new()
            } else {
                "drop".to_string()
            }
        };
        Plan {
            names: ServiceNames::new(&svc.name),
            comment: svc.name.to_string(),
            proto: svc.name.protocol.as_str(),
            has_endpoints,
            has_internal,
            has_external,
            uses_cluster_chain: !cat.cluster.is_empty() && svc.uses_cluster_endpoints(),
            uses_local_chain: has_local && svc.uses_local_endpoints(),
            uses_external_chain: has_endpoints && svc.externally_accessible(),
            // svcnet fails closed: ranges that all failed to parse still restrict (see ServicePort).
            uses_firewall_chain: !svc.load_balancer_vips.is_empty() && svc.source_ranges.is_some(),
            internal_verdict: verdict(has_internal),
            external_verdict: verdict(has_external),
        }
    }

    fn internal_chain(&self, svc: &ServicePort) -> &str {
        if svc.internal_policy_local {
            &self.names.local
        } else {
            &self.names.cluster
        }
    }

    fn external_policy_chain(&self, svc: &ServicePort) -> &str {
        if svc.external_policy_local {
            &self.names.local
        } else {
            &self.names.cluster
        }
    }
}

pub(super) fn render_service_port(svc: &ServicePort, cat: &Categorized, ctx: &Ctx<'_>) -> ServiceObjects {
    let p = Plan::new(svc, cat);
    let mut out = ServiceObjects {
        no_local_internal: p.has_endpoints && !p.has_internal,
        no_local_external: p.has_endpoints && !p.has_external,
        ..Default::default()
    };
    elements(&p, svc, &mut out.elements);
    out.chains = chains(&p, svc, cat, ctx);
    if let Some(timeout) = svc.session_affinity {
        out.sets = cat
            .all_reachable
            .iter()
            .map(|ep| Set {
                name: endpoint_names(&svc.name, ep).1,
                is_map: false,
                type_: addr_type(ctx.cfg.family).into(),
                // "dynamic" too: some kernels add it anyway, and re-adding with other flags fails.
                flags: vec!["dynamic", "timeout"],
                timeout: Some(timeout),
                comment: None,
            })
            .collect();
    }
    out
}

fn element(container: &'static str, key: Vec<String>, value: String, comment: Option<&str>) -> Element {
    Element {
        container,
        key,
        value: Some(value),
        comment: comment.map(str::to_string),
    }
}

/// Entries in cluster-ips, service-ips, service-nodeports, firewall-ips and the no-endpoint maps.
fn elements(p: &Plan, svc: &ServicePort, out: &mut Vec<Element>) {
    let (proto, port) = (p.proto, svc.port.to_string());
    let key = |ip: &std::net::IpAddr| vec![ip.to_string(), proto.to_string(), port.clone()];
    let external = format!("goto {}", p.names.external);
    let comment = Some(p.comment.as_str());

    out.push(Element {
        container: CLUSTER_IPS,
        key: vec![svc.cluster_ip.to_string()],
        value: None,
        comment: None,
    });
    if p.has_internal {
        let to = format!("goto {}", p.internal_chain(svc));
        out.push(element(SERVICE_IPS, key(&svc.cluster_ip), to, None));
    } else {
        let v = p.internal_verdict.clone();
        out.push(element(NO_ENDPOINT_SERVICES, key(&svc.cluster_ip), v, comment));
    }

    for ip in &svc.external_ips {
        if p.has_endpoints {
            out.push(element(SERVICE_IPS, key(ip), external.clone(), None));
        }
        if !p.has_external {
            let v = p.external_verdict.clone();
            out.push(element(NO_ENDPOINT_SERVICES, key(ip), v, comment));
        }
    }

    for ip in &svc.load_balancer_vips {
        if p.has_endpoints {
            out.push(element(SERVICE_IPS, key(ip), external.clone(), None));
        }
        if p.uses_firewall_chain {
            let to = format!("goto {}", p.names.firewall);
            out.push(element(FIREWALL_IPS, key(ip), to, None));
        }
    }
    if !p.has_external {
        for ip in &svc.load_balancer_vips {
            let v = p.external_verdict.clone();
            out.push(element(NO_ENDPOINT_SERVICES, key(ip), v, comment));
        }
    }

    if let Some(np) = svc.node_port {
        let key = vec![proto.to_string(), np.to_string()];
        if p.has_endpoints {
            out.push(element(SERVICE_NODEPORTS, key.clone(), external.clone(), None));
        }
        if !p.has_external {
            let v = p.external_verdict.clone();
            out.push(element(NO_ENDPOINT_NODEPORTS, key, v, comment));
        }
    }
}

/// The chains this port owns, in the order upstream writes them.
fn chains(p: &Plan, svc: &ServicePort, cat: &Categorized, ctx: &Ctx<'_>) -> Vec<Chain> {
    let ip = ctx.ip;
    let mut cluster = p.uses_cluster_chain.then(|| Chain::new(&p.names.cluster));
    let mut local = p.uses_local_chain.then(|| Chain::new(&p.names.local));

    // Internal traffic: masquerade what does not come from a local pod (or everything).
    if p.has_internal {
        let cip = svc.cluster_ip;
        let rule = if ctx.cfg.masquerade_all {
            Some(format!("{ip} daddr {cip} jump {MARK_MASQ}"))
        } else {
            ctx.local_detector
                .as_ref()
                .map(|(_, not_local)| format!("{ip} daddr {cip} {not_local} jump {MARK_MASQ}"))
        };
        let target = if svc.internal_policy_local {
            local.as_mut()
        } else {
            cluster.as_mut()
        };
        if let (Some(rule), Some(chain)) = (rule, target) {
            chain.rules.push(Rule::new(rule));
        }
    }

    let mut out = Vec::new();
    if p.uses_external_chain {
        out.push(external_chain(p, svc, ctx));
    }
    if p.uses_firewall_chain {
        out.push(firewall_chain(p, svc, ctx));
    }
    for (chain, eps) in [(cluster, &cat.cluster), (local, &cat.local)] {
        if let Some(mut chain) = chain {
            endpoint_jumps(&mut chain, svc, eps, ctx);
            out.push(chain);
        }
    }
    for ep in &cat.all_reachable {
        out.push(endpoint_chain(svc, ep, ctx));
    }
    out
}

/// external-*: masquerade for Cluster policy; for Local policy, short circuits for pod and node
/// sources; then on to the policy chain.
fn external_chain(p: &Plan, svc: &ServicePort, ctx: &Ctx<'_>) -> Chain {
    let mut chain = Chain::new(&p.names.external);
    if !svc.external_policy_local {
        chain.rules.push(Rule::new(format!("jump {MARK_MASQ}")));
    } else {
        if let Some((local, _)) = &ctx.local_detector {
            chain.rules.push(Rule::commented(
                format!("{local} goto {}", p.names.cluster),
                "short-circuit pod traffic",
            ));
        }
        chain.rules.push(Rule::commented(
            format!("fib saddr type local jump {MARK_MASQ}"),
            "masquerade local traffic",
        ));
        chain.rules.push(Rule::commented(
            format!("fib saddr type local goto {}", p.names.cluster),
            "short-circuit local traffic",
        ));
    }
    if p.has_external {
        chain
            .rules
            .push(Rule::new(format!("goto {}", p.external_policy_chain(svc))));
    }
    chain
}

/// firewall-*: drop sources outside loadBalancerSourceRanges (and the VIPs themselves, when the node
/// may connect: a node-local VIP loops back with the VIP as source).
fn firewall_chain(p: &Plan, svc: &ServicePort, ctx: &Ctx<'_>) -> Chain {
    let mut chain = Chain::new(&p.names.firewall);
    let ranges = svc.source_ranges.as_deref().unwrap_or_default();
    let mut sources: Vec<String> = ranges.iter().map(ToString::to_string).collect();
    let allow_from_node = ranges
        .iter()
        .any(|c| ctx.node.ips.iter().any(|ip| c.contains(ip)));
    if allow_from_node {
        sources.extend(svc.load_balancer_vips.iter().map(ToString::to_string));
    }
    let rule = if sources.is_empty() {
        // Restricted, but no range of this family parsed: drop all (svcnet fails closed).
        "drop".to_string()
    } else {
        format!("{} saddr != {{ {} }} drop", ctx.ip, sources.join(" , "))
    };
    chain.rules.push(Rule::new(rule));
    chain
}

/// Affinity lookups, then the random pick of an endpoint through a numgen verdict map.
fn endpoint_jumps(chain: &mut Chain, svc: &ServicePort, eps: &[Endpoint], ctx: &Ctx<'_>) {
    let names: Vec<(String, String)> = eps.iter().map(|ep| endpoint_names(&svc.name, ep)).collect();
    if svc.session_affinity.is_some() {
        for (ep_chain, set) in &names {
            chain
                .rules
                .push(Rule::new(format!("{} saddr @{set} goto {ep_chain}", ctx.ip)));
        }
    }
    let mut rule = format!("numgen random mod {} vmap {{ ", eps.len());
    for (i, (ep_chain, _)) in names.iter().enumerate() {
        if i > 0 {
            rule.push_str(", ");
        }
        let _ = write!(rule, "{i} : goto {ep_chain} ");
    }
    rule.push('}');
    chain.rules.push(Rule::new(rule));
}

/// endpoint-*: masquerade hairpin traffic, record affinity, DNAT.
fn endpoint_chain(svc: &ServicePort, ep: &Endpoint, ctx: &Ctx<'_>) -> Chain {
    let (name, set) = endpoint_names(&svc.name, ep);
    let ip = ctx.ip;
    let mut chain = Chain::new(name);
    chain
        .rules
        .push(Rule::new(format!("{ip} saddr {} jump {MARK_MASQ}", ep.ip)));
    if svc.session_affinity.is_some() {
        chain
            .rules
            .push(Rule::new(format!("update @{set} {{ {ip} saddr }}")));
    }
    chain.rules.push(Rule::new(format!(
        "meta l4proto {} dnat to {}",
        svc.name.protocol.as_str(),
        ep.addr()
    )));
    chain
}
