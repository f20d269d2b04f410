//! One service port explained: its chains, policies and endpoints, then representative packets (from
//! a local pod and from outside to the cluster IP, to the NodePort, the external and load-balancer
//! IPs) traced through the rendered rules.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::config::{DetectLocal, RenderConfig};
use crate::iptables::render::naming;
use crate::model::{Endpoints, Family, NodeFacts, Protocol, ProxyState, ServicePort};
use crate::model::{categorize, topology::Topology};
use crate::offline::trace::{self, Hook, Packet, Proto, TraceOptions, Verdict};

const OUTSIDE_V4: IpAddr = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 10));
const OUTSIDE_V6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x10));
const OUTSIDE: &str = "outside the cluster";

/// The rendered rules of one mode, ready to trace.
pub(super) enum Rules {
    Iptables(trace::Ruleset),
    Nftables(trace::nft::NftRuleset),
    /// The nftables mode's maps layout: no chain per service; its facts are set and map elements.
    NftMaps(trace::nft::NftRuleset),
}

impl Rules {
    fn trace(&self, packet: &Packet, opts: &TraceOptions) -> trace::Trace {
        match self {
            Rules::Iptables(r) => trace::trace(r, packet, opts),
            Rules::Nftables(r) | Rules::NftMaps(r) => trace::nft::trace(r, packet, opts),
        }
    }
}

/// What a port is explained against: one family's model, node, config and rules.
pub(super) struct Scene<'a> {
    pub state: &'a ProxyState,
    pub node: &'a NodeFacts,
    pub ruleset: &'a Rules,
    pub family: Family,
    pub cfg: &'a RenderConfig,
}

/// Writes the explanation of port `p`, which owns the chains `owned`.
pub(super) fn explain_port(out: &mut String, p: &ServicePort, owned: &[&str], scene: &Scene<'_>) {
    describe(out, p, owned, matches!(scene.ruleset, Rules::NftMaps(_)));
    endpoints(out, p, scene);
    for case in cases(out, p, scene) {
        trace_case(out, p.name.protocol, &case, scene);
    }
}

fn describe(out: &mut String, p: &ServicePort, owned: &[&str], maps: bool) {
    let pname = if p.name.port.is_empty() {
        "(unnamed)".to_string()
    } else {
        p.name.port.clone()
    };
    let _ = writeln!(
        out,
        "\nport {pname} {}/{}: service port name {:?}",
        p.port,
        p.name.protocol.as_str().to_uppercase(),
        p.name.to_string()
    );
    if maps {
        let _ = writeln!(out, "  elements in: {}", owned.join(", "));
    } else if owned.is_empty() {
        let _ = writeln!(out, "  chains: none of its own (no usable endpoints)");
    } else {
        let _ = writeln!(out, "  chains: {}", owned.join(", "));
    }
    let policy = |local: bool| if local { "Local" } else { "Cluster" };
    let _ = writeln!(
        out,
        "  policies: externalTrafficPolicy {}, internalTrafficPolicy {}, sessionAffinity {}",
        policy(p.external_policy_local),
        policy(p.internal_policy_local),
        p.session_affinity
            .map(|s| format!("ClientIP ({s}s)"))
            .unwrap_or_else(|| "None".into())
    );
}

/// The endpoints, which of them the policies and topology use, and the source ranges.
fn endpoints(out: &mut String, p: &ServicePort, scene: &Scene<'_>) {
    let empty = Endpoints::default();
    let eps = scene.state.endpoints.get(&p.name).unwrap_or(&empty);
    let cat = categorize(eps, p, scene.node);
    if eps.is_empty() {
        let _ = writeln!(
            out,
            "  endpoints: none in any EndpointSlice, so new connections are rejected"
        );
    }
    let key = p.name.to_string();
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
            match scene.ruleset {
                Rules::Iptables(_) => naming::sep_chain(&key, p.name.protocol.as_str(), &e.addr()),
                Rules::Nftables(_) => crate::nftables::render::naming::endpoint_names(&p.name, e).0,
                Rules::NftMaps(_) => "a slot of the endpoint maps".to_string(),
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
                scene.node.zone().unwrap_or("")
            );
        }
        Topology::None => {}
    }
    if let Some(ranges) = &p.source_ranges {
        let list: Vec<String> = ranges.iter().map(ToString::to_string).collect();
        let list = if list.is_empty() {
            "none valid: everything dropped".into()
        } else {
            list.join(", ")
        };
        let _ = writeln!(out, "  loadBalancerSourceRanges: {list}");
    }
}

/// One packet to trace: to `dst:dport` from `src` (described as `from`), entering at `hook`.
struct Case {
    what: String,
    dst: IpAddr,
    dport: u16,
    src: IpAddr,
    from: &'static str,
    hook: Hook,
}

fn case(what: &str, dst: IpAddr, dport: u16, src: IpAddr, from: &'static str, hook: Hook) -> Case {
    Case {
        what: what.to_string(),
        dst,
        dport,
        src,
        from,
        hook,
    }
}

/// The packets worth tracing for `p`; says so when a NodePort cannot be traced.
fn cases(out: &mut String, p: &ServicePort, scene: &Scene<'_>) -> Vec<Case> {
    let outside = match scene.family {
        Family::V4 => OUTSIDE_V4,
        Family::V6 => OUTSIDE_V6,
    };
    let node_ip = scene.node.ips.iter().find(|ip| scene.family.matches(ip)).copied();
    let pre = Hook::Prerouting;
    let mut cases = Vec::new();
    if let Some(pod) = pod_source(scene.node, scene.cfg) {
        cases.push(case(
            "cluster IP",
            p.cluster_ip,
            p.port,
            pod,
            "a pod on this node",
            pre,
        ));
    }
    cases.push(case("cluster IP", p.cluster_ip, p.port, outside, OUTSIDE, pre));
    if let Some(np) = p.node_port {
        match node_ip {
            Some(ip) => cases.push(case(
                &format!("NodePort {np} on the node"),
                ip,
                np,
                outside,
                OUTSIDE,
                pre,
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
        cases.push(case("external IP", *ip, p.port, outside, OUTSIDE, pre));
    }
    let lb = "load-balancer IP";
    for ip in &p.load_balancer_vips {
        if let Some(allowed) = p.source_ranges.as_ref().and_then(|r| r.first()) {
            let from = "an allowed source range";
            cases.push(case(lb, *ip, p.port, allowed.network(), from, pre));
        }
        cases.push(case(lb, *ip, p.port, outside, OUTSIDE, pre));
        if let Some(nip) = node_ip {
            cases.push(case(lb, *ip, p.port, nip, "this node itself", Hook::Output));
        }
    }
    cases
}

/// Traces one case and writes each path it can take, with its probability.
fn trace_case(out: &mut String, protocol: Protocol, c: &Case, scene: &Scene<'_>) {
    let proto = match protocol {
        Protocol::Tcp => Proto::Tcp,
        Protocol::Udp => Proto::Udp,
        Protocol::Sctp => Proto::Sctp,
    };
    let packet = Packet {
        src: c.src,
        dst: c.dst,
        dport: c.dport,
        proto,
        in_iface: None,
    };
    let opts = TraceOptions {
        node_ips: scene.node.ips.clone(),
        hook: c.hook,
    };
    let t = scene.ruleset.trace(&packet, &opts);
    let _ = writeln!(
        out,
        "  to {} {} from {} ({}):",
        c.what,
        fmt_addr(c.dst, c.dport),
        c.from,
        c.src
    );
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
