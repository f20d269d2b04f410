//! `explain`: where packets to one Service go, in words. It renders the ruleset (iptables or, with
//! `--proxy-mode nftables`, the `kube-proxy` table), then traces representative packets through it
//! with [`crate::trace`], so the explanation is exactly what the kernel would do with these rules.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use anyhow::{Result, bail};

use crate::config::{DetectLocal, ProxyMode, RenderConfig};
use crate::input::load;
use crate::model::{Family, NodeFacts, ProxyState, ServicePort, categorize, topology::Topology};
use crate::render::{FullOptions, naming, render};
use crate::settings::{Caps, RuleSettings};
use crate::trace::{self, Hook, Packet, Proto, TraceOptions, Verdict};

const OUTSIDE_V4: IpAddr = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 10));
const OUTSIDE_V6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x10));

/// The rendered rules of one mode, ready to trace.
enum Rules {
    Iptables(trace::Ruleset),
    Nftables(trace::nft::NftRuleset),
}

impl Rules {
    fn trace(&self, packet: &Packet, opts: &TraceOptions) -> trace::Trace {
        match self {
            Rules::Iptables(r) => trace::trace(r, packet, opts),
            Rules::Nftables(r) => trace::nft::trace(r, packet, opts),
        }
    }
}

pub fn explain(
    file: &Path,
    service: &str,
    rules: &RuleSettings,
    caps: Caps,
    mode: ProxyMode,
) -> Result<String> {
    let Some((ns, name)) = service.split_once('/') else {
        bail!("--service {service:?}: expected namespace/name");
    };
    let mut out = String::new();
    let mut found = false;
    for family in [Family::V4, Family::V6] {
        let (objects, node, state, cfg) = load(file, rules, caps, family)?;
        if family == Family::V4 {
            let Some(svc) = objects.services.iter().find(|s| {
                s.metadata.name.as_deref() == Some(name)
                    && s.metadata.namespace.as_deref().unwrap_or("default") == ns
            }) else {
                bail!("service {service} is not in {}", file.display());
            };
            if let Some(reason) = crate::model::service::skip_reason(svc) {
                let _ = writeln!(out, "{service}: svcnet-proxy writes no rules for it: {reason}.");
                return Ok(out);
            }
        }
        let ports: Vec<&ServicePort> = state
            .services
            .values()
            .map(AsRef::as_ref)
            .filter(|p| p.name.namespace == ns && p.name.name == name)
            .collect();
        if ports.is_empty() {
            continue;
        }
        found = true;
        let (ruleset, owners, what) = match mode {
            ProxyMode::Iptables => {
                let rendered = render(&state, &node, &cfg);
                let text = rendered
                    .payload(
                        &FullOptions {
                            jumps: true,
                            ..Default::default()
                        },
                        &cfg,
                    )
                    .0;
                (
                    Rules::Iptables(trace::parse(&text)?),
                    rendered.owners(),
                    format!("layout {:?}", cfg.layout),
                )
            }
            ProxyMode::Nftables => {
                let rendered = crate::nft::render(&state, &node, &cfg);
                let owners = rendered
                    .services
                    .iter()
                    .map(|(k, o)| (k.clone(), o.chains.iter().map(|c| c.name.clone()).collect()))
                    .collect();
                (
                    Rules::Nftables(trace::nft::parse(&rendered.text())?),
                    owners,
                    "nftables mode".to_string(),
                )
            }
        };
        let _ = writeln!(
            out,
            "Service {service} ({}, node {:?}, {what})",
            family.label(),
            node.name,
        );
        for p in ports {
            let owned: Vec<&str> = owners
                .get(&p.name)
                .map(|c| c.iter().map(String::as_str).collect())
                .unwrap_or_default();
            explain_port(&mut out, p, &owned, &state, &node, &ruleset, family, &cfg);
        }
    }
    if !found {
        let _ = writeln!(
            out,
            "{service}: no usable port or cluster IP; see the warnings above."
        );
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn explain_port(
    out: &mut String,
    p: &ServicePort,
    owned: &[&str],
    state: &ProxyState,
    node: &NodeFacts,
    ruleset: &Rules,
    family: Family,
    cfg: &RenderConfig,
) {
    let proto = p.name.protocol;
    let pname = if p.name.port.is_empty() {
        "(unnamed)".to_string()
    } else {
        p.name.port.clone()
    };
    let key = p.name.to_string();
    let _ = writeln!(
        out,
        "\nport {pname} {}/{}: service port name {key:?}",
        p.port,
        proto.as_str().to_uppercase()
    );
    if owned.is_empty() {
        let _ = writeln!(out, "  chains: none of its own (no usable endpoints)");
    } else {
        let _ = writeln!(out, "  chains: {}", owned.join(", "));
    }
    let _ = writeln!(
        out,
        "  policies: externalTrafficPolicy {}, internalTrafficPolicy {}, sessionAffinity {}",
        if p.external_policy_local {
            "Local"
        } else {
            "Cluster"
        },
        if p.internal_policy_local {
            "Local"
        } else {
            "Cluster"
        },
        p.session_affinity
            .map(|s| format!("ClientIP ({s}s)"))
            .unwrap_or_else(|| "None".into())
    );
    let empty = crate::model::Endpoints::default();
    let eps = state.endpoints.get(&p.name).unwrap_or(&empty);
    let cat = categorize(eps, p, node);
    if eps.is_empty() {
        let _ = writeln!(
            out,
            "  endpoints: none in any EndpointSlice, so new connections are rejected"
        );
    }
    for e in eps.iter() {
        let used = match (cat.cluster.contains(e), cat.local.contains(e)) {
            (true, true) => "used (Cluster and Local policy)",
            (true, false) => "used (Cluster policy)",
            (false, true) => "used (Local policy)",
            (false, false) => "NOT used",
        };
        let _ = writeln!(
            out,
            "  endpoint {}: {}{}{}, node {}: {used} -> {}",
            e.addr(),
            if e.ready { "ready" } else { "not ready" },
            if e.terminating { ", terminating" } else { "" },
            if !e.ready && e.serving { ", serving" } else { "" },
            e.node_name.as_deref().unwrap_or("?"),
            match ruleset {
                Rules::Iptables(_) => naming::sep_chain(&key, proto.as_str(), &e.addr()),
                Rules::Nftables(_) => crate::nft::naming::endpoint_names(&p.name, e).0,
            },
        );
    }
    match cat.topology {
        Topology::SameNode => {
            let _ = writeln!(
                out,
                "  topology: every endpoint has node hints; only those for this node are used"
            );
        }
        Topology::SameZone => {
            let _ = writeln!(
                out,
                "  topology: every endpoint has zone hints; only those for zone {:?} are used",
                node.zone().unwrap_or("")
            );
        }
        Topology::None => {}
    }
    if let Some(ranges) = &p.source_ranges {
        let list: Vec<String> = ranges.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "  loadBalancerSourceRanges: {}",
            if list.is_empty() {
                "none valid: everything dropped".into()
            } else {
                list.join(", ")
            }
        );
    }

    let outside = if family == Family::V4 {
        OUTSIDE_V4
    } else {
        OUTSIDE_V6
    };
    let pod = pod_source(node, cfg);
    let node_ip = node.ips.iter().find(|ip| family.matches(ip)).copied();
    let mut cases: Vec<(String, IpAddr, u16, IpAddr, &str, Hook)> = Vec::new();
    if let Some(pod) = pod {
        cases.push((
            "cluster IP".into(),
            p.cluster_ip,
            p.port,
            pod,
            "a pod on this node",
            Hook::Prerouting,
        ));
    }
    cases.push((
        "cluster IP".into(),
        p.cluster_ip,
        p.port,
        outside,
        "outside the cluster",
        Hook::Prerouting,
    ));
    if let Some(np) = p.node_port {
        match node_ip {
            Some(ip) => cases.push((
                format!("NodePort {np} on the node"),
                ip,
                np,
                outside,
                "outside the cluster",
                Hook::Prerouting,
            )),
            None => {
                let _ = writeln!(
                    out,
                    "  NodePort {np}: pass --node-ip (or a Node object) to trace it"
                );
            }
        }
    }
    for ip in &p.external_ips {
        cases.push((
            "external IP".into(),
            *ip,
            p.port,
            outside,
            "outside the cluster",
            Hook::Prerouting,
        ));
    }
    for ip in &p.load_balancer_vips {
        if let Some(allowed) = p.source_ranges.as_ref().and_then(|r| r.first()) {
            cases.push((
                "load-balancer IP".into(),
                *ip,
                p.port,
                allowed.network(),
                "an allowed source range",
                Hook::Prerouting,
            ));
        }
        cases.push((
            "load-balancer IP".into(),
            *ip,
            p.port,
            outside,
            "outside the cluster",
            Hook::Prerouting,
        ));
        if let Some(nip) = node_ip {
            cases.push((
                "load-balancer IP".into(),
                *ip,
                p.port,
                nip,
                "this node itself",
                Hook::Output,
            ));
        }
    }
    let tproto = match proto {
        crate::model::Protocol::Tcp => Proto::Tcp,
        crate::model::Protocol::Udp => Proto::Udp,
        crate::model::Protocol::Sctp => Proto::Sctp,
    };
    for (what, dst, dport, src, from, hook) in cases {
        let packet = Packet {
            src,
            dst,
            dport,
            proto: tproto,
            in_iface: None,
        };
        let t = ruleset.trace(
            &packet,
            &TraceOptions {
                node_ips: node.ips.clone(),
                hook,
            },
        );
        let _ = writeln!(out, "  to {what} {} from {from} ({src}):", fmt_addr(dst, dport));
        for o in &t.outcomes {
            let chains: Vec<&str> = dedup_chains(&o.steps);
            let verdict = match o.verdict {
                Verdict::Dnat(to) => format!("DNAT to {to}"),
                Verdict::Reject => "REJECTED (connection refused)".into(),
                Verdict::Drop => "DROPPED".into(),
                Verdict::Accept => "not a service packet here (destination unchanged)".into(),
            };
            let masq = match (&o.verdict, o.masquerade) {
                (Verdict::Drop | Verdict::Reject, _) => "",
                (_, true) => ", source masqueraded to the node",
                (_, false) => ", source kept",
            };
            let _ = writeln!(
                out,
                "    {:5.1}%  {verdict}{masq}  via {}",
                o.probability * 100.0,
                chains.join(" > ")
            );
            for n in &o.notes {
                let _ = writeln!(out, "           note: {n}");
            }
        }
    }
}

fn fmt_addr(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v) => format!("{v}:{port}"),
        IpAddr::V6(v) => format!("[{v}]:{port}"),
    }
}

/// The chains a path went through, once each, in order (jumps from built-in chains included).
fn dedup_chains(steps: &[trace::Step]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for s in steps {
        if out.last() != Some(&s.chain.as_str()) {
            out.push(&s.chain);
        }
    }
    out
}

/// An address inside this node's pod CIDR, or inside the cluster CIDR, to stand for "a local pod".
fn pod_source(node: &NodeFacts, cfg: &RenderConfig) -> Option<IpAddr> {
    let from_cidrs = |cidrs: &[ipnet::IpNet]| {
        cidrs
            .iter()
            .find(|c| cfg.family.matches(&c.addr()))
            .and_then(|c| c.hosts().nth(4))
    };
    if let Some(ip) = from_cidrs(&node.pod_cidrs) {
        return Some(ip);
    }
    match &cfg.detect_local {
        DetectLocal::ClusterCidr(c) | DetectLocal::NodeCidr(c) => from_cidrs(c),
        _ => None,
    }
}
