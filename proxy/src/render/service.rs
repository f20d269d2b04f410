//! Rules for one service port, following upstream kube-proxy's syncProxyRules per-service section.
//! The result is plain data: contributions to the shared chains plus the chains this port owns.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::Arc;

use super::endpoints::{DEFAULT_SHAPE, EndpointJump, selection_rules};
use super::naming::*;
use super::{Chain, LARGE_CLUSTER_ENDPOINTS, comment};
use crate::config::{Layout, RenderConfig};
use crate::model::{Categorized, Endpoint, NodeFacts, ProxyState, ServicePort, ServicePortName, categorize};

/// What one service port adds to the ruleset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceRules {
    /// nat KUBE-SERVICES rules with their destination (dispatch key).
    pub nat_services: Vec<(IpAddr, String)>,
    pub nat_nodeports: Vec<String>,
    pub filter_services: Vec<String>,
    pub filter_external: Vec<String>,
    pub filter_nodeports: Vec<String>,
    pub filter_firewall: Vec<String>,
    /// nat chains owned by this port (SVC/SVL/EXT/FW/SEP, and KUBE-EPG-* after their SVC/SVL chain),
    /// in upstream order.
    pub chains: Vec<Arc<Chain>>,
    /// For metrics: no local endpoints for internal / external traffic.
    pub no_local_internal: bool,
    pub no_local_external: bool,
}

impl ServiceRules {
    /// Drops spare capacity (the render cache keeps these lines between syncs).
    pub fn shrink_to_fit(&mut self) {
        self.nat_services.shrink_to_fit();
        for v in [
            &mut self.nat_nodeports,
            &mut self.filter_services,
            &mut self.filter_external,
            &mut self.filter_nodeports,
            &mut self.filter_firewall,
        ] {
            v.shrink_to_fit();
        }
        self.chains.shrink_to_fit();
    }
}

pub struct Ctx<'a> {
    pub cfg: &'a RenderConfig,
    pub node: &'a NodeFacts,
    /// Upstream drops per-endpoint comments above 1000 endpoints to shrink the payload.
    pub large_cluster: bool,
    pub local_detector: Option<(String, String)>,
    /// Endpoints of all service ports (for large-cluster mode and stats).
    pub total_endpoints: usize,
}

impl<'a> Ctx<'a> {
    pub fn new(state: &ProxyState, node: &'a NodeFacts, cfg: &'a RenderConfig) -> Ctx<'a> {
        let total_endpoints: usize = state.services.keys().map(|k| endpoints_of(state, k).len()).sum();
        Ctx {
            cfg,
            node,
            large_cluster: total_endpoints > LARGE_CLUSTER_ENDPOINTS,
            local_detector: cfg.local_detector(),
            total_endpoints,
        }
    }

    /// Renders one port of `state`.
    pub fn render(&self, state: &ProxyState, name: &ServicePortName, svc: &ServicePort) -> ServiceRules {
        let eps = endpoints_of(state, name);
        render_service_port(svc, &categorize(eps, svc, self.node), self)
    }
}

/// A port's endpoints (none when it has no slice).
pub fn endpoints_of<'s>(state: &'s ProxyState, name: &ServicePortName) -> &'s [Endpoint] {
    state.endpoints.get(name).map_or(&[], |e| &e[..])
}

/// The decisions upstream takes before writing anything for a service port: which chains exist and
/// whether internal/external traffic has endpoints to go to.
struct Plan {
    name: String,
    /// `-m <proto> -p <proto>`, as upstream writes it.
    m: String,
    svc_chain: String,
    svl_chain: String,
    ext_chain: String,
    fw_chain: String,
    has_endpoints: bool,
    has_internal: bool,
    has_external: bool,
    uses_cluster_chain: bool,
    uses_local_chain: bool,
    uses_ext_chain: bool,
    uses_fw_chain: bool,
    /// Target and comment of the filter rule for internal / external traffic without endpoints.
    internal_filter: (&'static str, String),
    external_filter: (&'static str, String),
}

impl Plan {
    fn new(svc: &ServicePort, cat: &Categorized) -> Plan {
        let name = svc.name.to_string();
        let proto = svc.name.protocol.as_str();
        let has_endpoints = cat.has_any;
        let has_local = has_endpoints && !cat.local.is_empty();
        let has_internal = if svc.internal_policy_local {
            has_local
        } else {
            has_endpoints
        };
        let has_external = if svc.external_policy_local {
            has_local
        } else {
            has_endpoints
        };
        let no_endpoints = comment(&format!("{name} has no endpoints"));
        let no_local = comment(&format!("{name} has no local endpoints"));
        let filter = |has: bool| {
            if !has_endpoints {
                ("REJECT", no_endpoints.clone())
            } else if has {
                ("", no_local.clone())
            } else {
                ("DROP", no_local.clone())
            }
        };
        Plan {
            m: format!("-m {proto} -p {proto}"),
            svc_chain: svc_chain(&name, proto),
            svl_chain: svl_chain(&name, proto),
            ext_chain: ext_chain(&name, proto),
            fw_chain: fw_chain(&name, proto),
            has_endpoints,
            has_internal,
            has_external,
            uses_cluster_chain: !cat.cluster.is_empty() && svc.uses_cluster_endpoints(),
            uses_local_chain: !cat.local.is_empty() && svc.uses_local_endpoints(),
            uses_ext_chain: has_endpoints && svc.externally_accessible(),
            uses_fw_chain: has_endpoints && !svc.load_balancer_vips.is_empty() && svc.source_ranges.is_some(),
            internal_filter: filter(has_internal),
            external_filter: filter(has_external),
            name,
        }
    }

    fn internal_chain(&self, svc: &ServicePort) -> &str {
        if svc.internal_policy_local {
            &self.svl_chain
        } else {
            &self.svc_chain
        }
    }

    fn external_policy_chain(&self, svc: &ServicePort) -> &str {
        if svc.external_policy_local {
            &self.svl_chain
        } else {
            &self.svc_chain
        }
    }
}

pub fn render_service_port(svc: &ServicePort, cat: &Categorized, ctx: &Ctx<'_>) -> ServiceRules {
    let plan = Plan::new(svc, cat);
    let mut out = ServiceRules {
        no_local_internal: plan.has_endpoints && !plan.has_internal,
        no_local_external: plan.has_endpoints && !plan.has_external,
        ..Default::default()
    };
    entry_rules(&plan, svc, ctx.cfg, &mut out);
    out.chains = own_chains(&plan, svc, cat, ctx);
    out
}

/// Rules in the shared chains that catch this port's addresses: nat KUBE-SERVICES and KUBE-NODEPORTS when
/// there are endpoints, filter REJECT/DROP when there are none (for that kind of traffic).
fn entry_rules(p: &Plan, svc: &ServicePort, cfg: &RenderConfig, out: &mut ServiceRules) {
    let (name, m, port, cip) = (&p.name, &p.m, svc.port, svc.cluster_ip);
    let (int_target, int_comment) = &p.internal_filter;
    let (ext_target, ext_comment) = &p.external_filter;

    if p.has_internal {
        let c = comment_arg(&format!("{name} cluster IP"));
        out.nat_services.push((
            cip,
            format!("{c} {m} -d {cip} --dport {port} -j {}", p.internal_chain(svc)),
        ));
    } else {
        out.filter_services.push(format!(
            "-m comment --comment {int_comment} {m} -d {cip} --dport {port} -j {int_target}"
        ));
    }

    for ip in &svc.external_ips {
        if p.has_endpoints {
            let c = comment_arg(&format!("{name} external IP"));
            out.nat_services
                .push((*ip, format!("{c} {m} -d {ip} --dport {port} -j {}", p.ext_chain)));
        }
        if !p.has_external {
            out.filter_external.push(format!(
                "-m comment --comment {ext_comment} {m} -d {ip} --dport {port} -j {ext_target}"
            ));
        }
    }

    let lb_chain = if p.uses_fw_chain {
        &p.fw_chain
    } else {
        &p.ext_chain
    };
    for ip in &svc.load_balancer_vips {
        if p.has_endpoints {
            let c = comment_arg(&format!("{name} loadbalancer IP"));
            out.nat_services
                .push((*ip, format!("{c} {m} -d {ip} --dport {port} -j {lb_chain}")));
        }
        if p.uses_fw_chain {
            let c = comment_arg(&format!("{name} traffic not accepted by {}", p.fw_chain));
            out.filter_firewall
                .push(format!("{c} {m} -d {ip} --dport {port} -j DROP"));
        }
    }
    if !p.has_external {
        for ip in &svc.load_balancer_vips {
            out.filter_external.push(format!(
                "-m comment --comment {ext_comment} {m} -d {ip} --dport {port} -j {ext_target}"
            ));
        }
    }

    if let Some(np) = svc.node_port {
        if p.has_endpoints {
            if cfg.nfacct && cfg.effective_localhost_nodeports() {
                // Counts NodePort connections to 127.0.0.0/8 (upstream's localhost-NodePort metric);
                // the rule after it would take them to the same chain.
                out.nat_nodeports.push(format!(
                    "-m comment --comment {} {m} -d 127.0.0.0/8 --dport {np} -m nfacct --nfacct-name {} -j {}",
                    comment(name),
                    NFACCT_LOCALHOST_NODEPORTS,
                    p.ext_chain
                ));
            }
            out.nat_nodeports.push(format!(
                "-m comment --comment {} {m} --dport {np} -j {}",
                comment(name),
                p.ext_chain
            ));
        }
        if !p.has_external {
            out.filter_external.push(format!(
                "-m comment --comment {ext_comment} -m addrtype --dst-type LOCAL {m} --dport {np} -j {ext_target}"
            ));
        }
    }

    // Health check node port: always accepted, local endpoints or not.
    if let Some(hc) = svc.health_check_node_port {
        let c = comment_arg(&format!("{name} health check node port"));
        out.filter_nodeports
            .push(format!("{c} -m tcp -p tcp --dport {hc} -j ACCEPT"));
    }
}

/// The nat chains this port owns, in upstream's order: EXT, FW, SVC, SVL, then one SEP per endpoint.
fn own_chains(p: &Plan, svc: &ServicePort, cat: &Categorized, ctx: &Ctx<'_>) -> Vec<Arc<Chain>> {
    let mut chains = Vec::new();
    if p.uses_ext_chain {
        chains.push(Arc::new(Chain {
            name: p.ext_chain.clone(),
            rules: ext_chain_rules(p, svc, ctx),
        }));
    }
    if p.uses_fw_chain {
        chains.push(Arc::new(Chain {
            name: p.fw_chain.clone(),
            rules: fw_chain_rules(p, svc, ctx),
        }));
    }
    let masq = internal_masquerade(p, svc, ctx);
    for (chain, used, eps) in [
        (&p.svc_chain, p.uses_cluster_chain, &cat.cluster),
        (&p.svl_chain, p.uses_local_chain, &cat.local),
    ] {
        if !used {
            continue;
        }
        let mut rules: Vec<String> = masq
            .iter()
            .filter(|_| p.internal_chain(svc) == chain.as_str())
            .cloned()
            .collect();
        let groups = endpoint_jumps(&mut rules, chain, &p.name, svc, eps, ctx);
        chains.push(Arc::new(Chain {
            name: chain.clone(),
            rules,
        }));
        chains.extend(groups.into_iter().map(Arc::new));
    }
    for ep in &cat.all_reachable {
        chains.push(Arc::new(endpoint_chain(&p.name, svc, ep, ctx)));
    }
    chains
}

/// First rule of the internal chain: masquerade off-cluster sources (or everything with --masquerade-all),
/// since a cluster IP reached from outside may be answered from another node.
fn internal_masquerade(p: &Plan, svc: &ServicePort, ctx: &Ctx<'_>) -> Option<String> {
    if !p.has_internal {
        return None;
    }
    let (name, m, port, cip) = (&p.name, &p.m, svc.port, svc.cluster_ip);
    let args = format!(
        "{} {m} -d {cip} --dport {port}",
        comment_arg(&format!("{name} cluster IP"))
    );
    if ctx.cfg.masquerade_all {
        Some(format!("{args} -j {KUBE_MARK_MASQ}"))
    } else {
        ctx.local_detector
            .as_ref()
            .map(|(_, not_local)| format!("{args} {not_local} -j {KUBE_MARK_MASQ}"))
    }
}

/// KUBE-EXT: masquerade for Cluster policy; for Local policy, short circuits for pod and node sources.
fn ext_chain_rules(p: &Plan, svc: &ServicePort, ctx: &Ctx<'_>) -> Vec<String> {
    let name = &p.name;
    let mut rules = Vec::new();
    if !svc.external_policy_local {
        let c = comment_arg(&format!("masquerade traffic for {name} external destinations"));
        rules.push(format!("{c} -j {KUBE_MARK_MASQ}"));
    } else {
        if let Some((local, _)) = &ctx.local_detector {
            let c = comment_arg(&format!("pod traffic for {name} external destinations"));
            rules.push(format!("{c} {local} -j {}", p.svc_chain));
        }
        let c = comment_arg(&format!(
            "masquerade LOCAL traffic for {name} external destinations"
        ));
        rules.push(format!("{c} -m addrtype --src-type LOCAL -j {KUBE_MARK_MASQ}"));
        let c = comment_arg(&format!("route LOCAL traffic for {name} external destinations"));
        rules.push(format!("{c} -m addrtype --src-type LOCAL -j {}", p.svc_chain));
    }
    if p.has_external {
        rules.push(format!("-j {}", p.external_policy_chain(svc)));
    }
    rules
}

/// KUBE-FW: allowed source ranges jump on to KUBE-EXT; the rest falls through undNATed and is dropped by
/// KUBE-PROXY-FIREWALL in filter.
fn fw_chain_rules(p: &Plan, svc: &ServicePort, ctx: &Ctx<'_>) -> Vec<String> {
    let c = comment_arg(&format!("{} loadbalancer IP", p.name));
    let mut rules = Vec::new();
    let mut allow_from_node = false;
    for cidr in svc.source_ranges.iter().flatten() {
        rules.push(format!("{c} -s {cidr} -j {}", p.ext_chain));
        allow_from_node |= ctx.node.ips.iter().any(|ip| cidr.contains(ip));
    }
    // A VIP that is local to the node loops back with the VIP as source: allow it when the node may.
    if allow_from_node {
        for ip in &svc.load_balancer_vips {
            rules.push(format!("{c} -s {ip} -j {}", p.ext_chain));
        }
    }
    rules.push(comment_arg(&format!(
        "other traffic to {} will be dropped by KUBE-PROXY-FIREWALL",
        p.name
    )));
    rules
}

/// Affinity checks, then the random pick of an endpoint (a tree of KUBE-EPG-* chains for large
/// services in the tree layout, see `endpoints.rs`). Returns those KUBE-EPG-* chains.
fn endpoint_jumps(
    rules: &mut Vec<String>,
    chain: &str,
    name: &str,
    svc: &ServicePort,
    eps: &[Endpoint],
    ctx: &Ctx<'_>,
) -> Vec<Chain> {
    let proto = svc.name.protocol.as_str();
    let c = |ep: &Endpoint| {
        if ctx.large_cluster {
            String::new()
        } else {
            format!("{} ", comment_arg(&format!("{name} -> {}", ep.addr())))
        }
    };
    // Affinity stays in the top chain, before any random pick, as upstream orders it.
    if let Some(secs) = svc.session_affinity {
        for ep in eps {
            let sep = sep_chain(name, proto, &ep.addr());
            rules.push(format!(
                "{}-m recent --name {sep} --rcheck --seconds {secs} --reap -j {sep}",
                c(ep)
            ));
        }
    }
    let jumps: Vec<EndpointJump> = eps
        .iter()
        .map(|ep| EndpointJump {
            comment: c(ep),
            sep: sep_chain(name, proto, &ep.addr()),
        })
        .collect();
    let shape = match ctx.cfg.layout {
        Layout::Tree => Some(DEFAULT_SHAPE),
        Layout::Flat => None,
    };
    let (picks, groups) = selection_rules(chain, &jumps, shape);
    rules.extend(picks);
    groups
}

fn endpoint_chain(name: &str, svc: &ServicePort, ep: &Endpoint, ctx: &Ctx<'_>) -> Chain {
    let proto = svc.name.protocol.as_str();
    let sep = sep_chain(name, proto, &ep.addr());
    let c = if ctx.large_cluster {
        String::new()
    } else {
        format!("-m comment --comment {} ", comment(name))
    };
    let mut dnat = c.clone();
    if svc.session_affinity.is_some() {
        let _ = write!(dnat, "-m recent --name {sep} --set ");
    }
    let _ = write!(
        dnat,
        "-m {proto} -p {proto} -j DNAT --to-destination {}",
        ep.addr()
    );
    Chain {
        name: sep,
        rules: vec![format!("{c}-s {} -j {KUBE_MARK_MASQ}", ep.ip), dnat],
    }
}

fn comment_arg(text: &str) -> String {
    format!("-m comment --comment {}", comment(text))
}
