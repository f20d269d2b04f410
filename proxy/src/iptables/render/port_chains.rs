//! The nat chains a service port owns, in upstream's order: KUBE-EXT, KUBE-FW, KUBE-SVC, KUBE-SVL (with
//! the KUBE-EPG-* tree of a large service in the tree layout), then one KUBE-SEP per endpoint.

use std::fmt::Write as _;
use std::sync::Arc;

use super::endpoints::{DEFAULT_SHAPE, EndpointJump, selection_rules};
use super::naming::*;
use super::plan::{Ctx, Plan, comment_arg};
use super::{Chain, comment};
use crate::config::Layout;
use crate::model::{Categorized, Endpoint, ServicePort};

/// The nat chains this port owns, in upstream's order: EXT, FW, SVC, SVL, then one SEP per endpoint.
pub(super) fn own_chains(p: &Plan, svc: &ServicePort, cat: &Categorized, ctx: &Ctx<'_>) -> Vec<Arc<Chain>> {
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
