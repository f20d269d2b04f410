//! Rules for one service port, following upstream kube-proxy's syncProxyRules per-service section.
//! The result is plain data: contributions to the shared chains plus the chains this port owns.

use std::fmt::Write as _;
use std::net::IpAddr;

use super::naming::*;
use super::{Chain, comment};
use crate::config::RenderConfig;
use crate::model::{Categorized, Endpoint, NodeFacts, ServicePort};

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
    /// nat chains owned by this port (SVC/SVL/EXT/FW/SEP), in upstream order.
    pub chains: Vec<Chain>,
    /// For metrics: no local endpoints for internal / external traffic.
    pub no_local_internal: bool,
    pub no_local_external: bool,
}

pub struct Ctx<'a> {
    pub cfg: &'a RenderConfig,
    pub node: &'a NodeFacts,
    /// Upstream drops per-endpoint comments above 1000 endpoints to shrink the payload.
    pub large_cluster: bool,
    pub local_detector: Option<(String, String)>,
}

fn probability(n: usize) -> String {
    format!("{:.10}", 1.0 / n as f64)
}

pub fn render_service_port(svc: &ServicePort, cat: &Categorized, ctx: &Ctx<'_>) -> ServiceRules {
    let mut out = ServiceRules::default();
    let name = svc.name.to_string();
    let proto = svc.name.protocol.as_str();
    let port = svc.port;

    let svc_chain = svc_chain(&name, proto);
    let svl_chain = svl_chain(&name, proto);
    let ext_chain = ext_chain(&name, proto);
    let fw_chain = fw_chain(&name, proto);

    let uses_cluster_chain = !cat.cluster.is_empty() && svc.uses_cluster_endpoints();
    let uses_local_chain = !cat.local.is_empty() && svc.uses_local_endpoints();
    let has_endpoints = cat.has_any;

    let (internal_chain, has_internal) = if svc.internal_policy_local {
        (&svl_chain, has_endpoints && !cat.local.is_empty())
    } else {
        (&svc_chain, has_endpoints)
    };
    let (external_policy_chain, has_external) = if svc.external_policy_local {
        (&svl_chain, has_endpoints && !cat.local.is_empty())
    } else {
        (&svc_chain, has_endpoints)
    };
    let uses_ext_chain = has_endpoints && svc.externally_accessible();
    let uses_fw_chain = has_endpoints && !svc.load_balancer_vips.is_empty() && svc.source_ranges.is_some();
    let lb_chain = if uses_fw_chain { &fw_chain } else { &ext_chain };

    let (int_target, int_comment, ext_target, ext_comment) = if !has_endpoints {
        let c = comment(&format!("{name} has no endpoints"));
        ("REJECT", c.clone(), "REJECT", c)
    } else {
        let c = comment(&format!("{name} has no local endpoints"));
        (
            if has_internal { "" } else { "DROP" },
            c.clone(),
            if has_external { "" } else { "DROP" },
            c,
        )
    };
    out.no_local_internal = has_endpoints && !has_internal;
    out.no_local_external = has_endpoints && !has_external;

    let m = format!("-m {proto} -p {proto}");
    let cip = svc.cluster_ip;

    // Cluster IP.
    if has_internal {
        out.nat_services.push((
            cip,
            format!(
                "{} {m} -d {cip} --dport {port} -j {internal_chain}",
                comment_arg(&format!("{name} cluster IP"))
            ),
        ));
    } else {
        out.filter_services.push(format!(
            "-m comment --comment {int_comment} {m} -d {cip} --dport {port} -j {int_target}"
        ));
    }

    // External IPs.
    for ip in &svc.external_ips {
        if has_endpoints {
            out.nat_services.push((
                *ip,
                format!(
                    "{} {m} -d {ip} --dport {port} -j {ext_chain}",
                    comment_arg(&format!("{name} external IP"))
                ),
            ));
        }
        if !has_external {
            out.filter_external.push(format!(
                "-m comment --comment {ext_comment} {m} -d {ip} --dport {port} -j {ext_target}"
            ));
        }
    }

    // Load-balancer VIPs.
    for ip in &svc.load_balancer_vips {
        if has_endpoints {
            out.nat_services.push((
                *ip,
                format!(
                    "{} {m} -d {ip} --dport {port} -j {lb_chain}",
                    comment_arg(&format!("{name} loadbalancer IP"))
                ),
            ));
        }
        if uses_fw_chain {
            out.filter_firewall.push(format!(
                "{} {m} -d {ip} --dport {port} -j DROP",
                comment_arg(&format!("{name} traffic not accepted by {fw_chain}"))
            ));
        }
    }
    if !has_external {
        for ip in &svc.load_balancer_vips {
            out.filter_external.push(format!(
                "-m comment --comment {ext_comment} {m} -d {ip} --dport {port} -j {ext_target}"
            ));
        }
    }

    // NodePorts.
    if let Some(np) = svc.node_port {
        if has_endpoints {
            out.nat_nodeports.push(format!(
                "-m comment --comment {} {m} --dport {np} -j {ext_chain}",
                comment(&name)
            ));
        }
        if !has_external {
            out.filter_external.push(format!(
                "-m comment --comment {ext_comment} -m addrtype --dst-type LOCAL {m} --dport {np} -j {ext_target}"
            ));
        }
    }

    // Health check node port: always accepted, local endpoints or not.
    if let Some(hc) = svc.health_check_node_port {
        out.filter_nodeports.push(format!(
            "{} -m tcp -p tcp --dport {hc} -j ACCEPT",
            comment_arg(&format!("{name} health check node port"))
        ));
    }

    // Internal traffic: masquerade off-cluster sources (or everything with --masquerade-all).
    let mut chains_rules: Vec<(String, Vec<String>)> = Vec::new();
    let mut push = |chain: &str, rule: String| {
        if let Some((_, rules)) = chains_rules.iter_mut().find(|(c, _)| c == chain) {
            rules.push(rule);
        } else {
            chains_rules.push((chain.to_string(), vec![rule]));
        }
    };
    if has_internal {
        let args = format!(
            "{} {m} -d {cip} --dport {port}",
            comment_arg(&format!("{name} cluster IP"))
        );
        if ctx.cfg.masquerade_all {
            push(internal_chain, format!("{args} -j {KUBE_MARK_MASQ}"));
        } else if let Some((_, not_local)) = &ctx.local_detector {
            push(internal_chain, format!("{args} {not_local} -j {KUBE_MARK_MASQ}"));
        }
    }

    // External traffic chain.
    let mut ext_rules = Vec::new();
    if uses_ext_chain {
        if !svc.external_policy_local {
            ext_rules.push(format!(
                "{} -j {KUBE_MARK_MASQ}",
                comment_arg(&format!("masquerade traffic for {name} external destinations"))
            ));
        } else {
            if let Some((local, _)) = &ctx.local_detector {
                ext_rules.push(format!(
                    "{} {local} -j {svc_chain}",
                    comment_arg(&format!("pod traffic for {name} external destinations"))
                ));
            }
            ext_rules.push(format!(
                "{} -m addrtype --src-type LOCAL -j {KUBE_MARK_MASQ}",
                comment_arg(&format!(
                    "masquerade LOCAL traffic for {name} external destinations"
                ))
            ));
            ext_rules.push(format!(
                "{} -m addrtype --src-type LOCAL -j {svc_chain}",
                comment_arg(&format!("route LOCAL traffic for {name} external destinations"))
            ));
        }
        if has_external {
            ext_rules.push(format!("-j {external_policy_chain}"));
        }
    }

    // Firewall chain (loadBalancerSourceRanges).
    let mut fw_rules = Vec::new();
    if uses_fw_chain {
        let c = comment_arg(&format!("{name} loadbalancer IP"));
        let mut allow_from_node = false;
        for cidr in svc.source_ranges.iter().flatten() {
            fw_rules.push(format!("{c} -s {cidr} -j {ext_chain}"));
            allow_from_node |= ctx.node.ips.iter().any(|ip| cidr.contains(ip));
        }
        if allow_from_node {
            for ip in &svc.load_balancer_vips {
                fw_rules.push(format!("{c} -s {ip} -j {ext_chain}"));
            }
        }
        fw_rules.push(comment_arg(&format!(
            "other traffic to {name} will be dropped by KUBE-PROXY-FIREWALL"
        )));
    }

    // Own chains in upstream's order: EXT, FW, SVC, SVL, SEPs.
    let mut chains: Vec<Chain> = Vec::new();
    let take = |rules: &mut Vec<(String, Vec<String>)>, chain: &str| -> Vec<String> {
        rules
            .iter()
            .position(|(c, _)| c == chain)
            .map(|i| rules.remove(i).1)
            .unwrap_or_default()
    };
    if uses_ext_chain {
        let mut rules = take(&mut chains_rules, &ext_chain);
        rules.extend(ext_rules);
        chains.push(Chain {
            name: ext_chain.clone(),
            rules,
        });
    }
    if uses_fw_chain {
        chains.push(Chain {
            name: fw_chain.clone(),
            rules: fw_rules,
        });
    }
    if uses_cluster_chain {
        let mut rules = take(&mut chains_rules, &svc_chain);
        endpoint_jumps(&mut rules, &name, svc, &cat.cluster, ctx);
        chains.push(Chain {
            name: svc_chain.clone(),
            rules,
        });
    }
    if uses_local_chain {
        let mut rules = take(&mut chains_rules, &svl_chain);
        endpoint_jumps(&mut rules, &name, svc, &cat.local, ctx);
        chains.push(Chain {
            name: svl_chain.clone(),
            rules,
        });
    }
    for ep in &cat.all_reachable {
        chains.push(endpoint_chain(&name, svc, ep, ctx));
    }
    out.chains = chains;
    out
}

fn endpoint_jumps(rules: &mut Vec<String>, name: &str, svc: &ServicePort, eps: &[Endpoint], ctx: &Ctx<'_>) {
    let proto = svc.name.protocol.as_str();
    let c = |ep: &Endpoint| {
        if ctx.large_cluster {
            String::new()
        } else {
            format!("{} ", comment_arg(&format!("{name} -> {}", ep.addr())))
        }
    };
    if let Some(secs) = svc.session_affinity {
        for ep in eps {
            let sep = sep_chain(name, proto, &ep.addr());
            rules.push(format!(
                "{}-m recent --name {sep} --rcheck --seconds {secs} --reap -j {sep}",
                c(ep)
            ));
        }
    }
    let n = eps.len();
    for (i, ep) in eps.iter().enumerate() {
        let sep = sep_chain(name, proto, &ep.addr());
        let mut r = c(ep);
        if i + 1 < n {
            let _ = write!(
                r,
                "-m statistic --mode random --probability {} ",
                probability(n - i)
            );
        }
        let _ = write!(r, "-j {sep}");
        rules.push(r);
    }
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
