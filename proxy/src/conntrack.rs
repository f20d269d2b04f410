//! UDP conntrack reconciliation after a sync, as kube-proxy does it (1.33's reconciler with 1.34-1.37's
//! fixes). UDP has no connection end, so a conntrack entry keeps sending a client's datagrams to the
//! endpoint chosen first even after that endpoint left the service; an entry created while the service
//! had no endpoints (or before the rules existed, e.g. while the proxy was down) keeps them unanswered
//! or un-NATed. After every sync the UDP entries are listed and each one addressed to a UDP service
//! (cluster IP, external IP or LB IP and port, or a nodePort) whose reply does not come from a serving
//! endpoint is deleted. A service scaled to zero has no serving endpoint, so all its flows go
//! (kubernetes#139629: one-way senders would otherwise keep DNATing to the deleted pod forever), and so
//! do the flows of a UDP service deleted since the last sync (kubernetes#141371).
//!
//! Which entries are stale is computed purely ([`stale_flows`]) from the state and the parsed listing
//! ([`parse_flows`]). Listing and deletion use the `conntrack` CLI from conntrack-tools (a netlink
//! implementation would avoid the processes, but the CLI is what every node image has and it filters in
//! the kernel the same way). Both modes run it after their syncs; neither owns it:
//!
//! Never imports: crate::iptables, crate::nftables.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::IpAddr;

use crate::exec::{ToolError, exec};
use crate::model::{Family, Protocol, ProxyState};

/// One UDP conntrack entry, reduced to what decides whether it is stale.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Flow {
    /// Original direction: where the client sent it (a service address before DNAT).
    pub orig_dst: IpAddr,
    pub orig_dport: u16,
    /// Reply direction: who answers (the endpoint after DNAT; the destination itself without NAT).
    pub reply_src: IpAddr,
}

/// The UDP service addresses of one sync, remembered so that the next one can clear the flows of
/// services deleted in between.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UdpTargets {
    pub vips: BTreeSet<(IpAddr, u16)>,
    pub node_ports: BTreeSet<u16>,
}

impl UdpTargets {
    pub(crate) fn of(state: &ProxyState) -> UdpTargets {
        let mut t = UdpTargets::default();
        for svc in state
            .services
            .values()
            .filter(|s| s.name.protocol == Protocol::Udp)
        {
            for vip in vips(svc) {
                t.vips.insert((vip, svc.port));
            }
            t.node_ports.extend(svc.node_port);
        }
        t
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.vips.is_empty() && self.node_ports.is_empty()
    }
}

fn vips(svc: &crate::model::ServicePort) -> impl Iterator<Item = IpAddr> + '_ {
    std::iter::once(svc.cluster_ip)
        .chain(svc.external_ips.iter().copied())
        .chain(svc.load_balancer_vips.iter().copied())
}

/// One `conntrack -D` filter.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Deletion {
    /// Original destination address; `None` for NodePort flows (any local address).
    pub orig_dst: Option<IpAddr>,
    /// Original destination port (service port or nodePort).
    pub dport: u16,
    /// Reply source: the address the flow answers from, which is not a serving endpoint.
    pub reply_src: IpAddr,
}

/// Parses `conntrack -L -p udp` output (one entry per line: the original tuple's `src= dst= sport=
/// dport=`, then the reply tuple's). Lines that do not hold both tuples are skipped.
pub(crate) fn parse_flows(text: &str) -> Vec<Flow> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Flow> {
    let mut words = line.split_whitespace();
    if !words.any(|w| w == "udp") {
        return None;
    }
    let (mut dsts, mut srcs, mut dports) = (Vec::new(), Vec::new(), Vec::new());
    for w in words {
        if let Some(v) = w.strip_prefix("dst=") {
            dsts.push(v);
        } else if let Some(v) = w.strip_prefix("src=") {
            srcs.push(v);
        } else if let Some(v) = w.strip_prefix("dport=") {
            dports.push(v);
        }
    }
    Some(Flow {
        orig_dst: dsts.first()?.parse().ok()?,
        orig_dport: dports.first()?.parse().ok()?,
        reply_src: srcs.get(1)?.parse().ok()?,
    })
}

/// The deletions that leave only flows answered by a serving endpoint (ready, or serving while
/// terminating) of the UDP service they were sent to. Traffic policies, topology and terminating state
/// are not considered, as upstream: a change to the service must not break flows a TCP connection
/// would keep.
/// `previous` is what the last sync served: its addresses the state no longer has belong to deleted
/// services, which have no endpoint at all.
pub(crate) fn stale_flows(state: &ProxyState, previous: &UdpTargets, flows: &[Flow]) -> Vec<Deletion> {
    let mut by_vip: HashMap<(IpAddr, u16), HashSet<IpAddr>> = HashMap::new();
    let mut by_node_port: HashMap<u16, HashSet<IpAddr>> = HashMap::new();
    // Deleted services first: a current service on the same address or nodePort overrides them.
    for vip in &previous.vips {
        by_vip.insert(*vip, HashSet::new());
    }
    for np in &previous.node_ports {
        by_node_port.insert(*np, HashSet::new());
    }
    for (name, svc) in state
        .services
        .iter()
        .filter(|(_, s)| s.name.protocol == Protocol::Udp)
    {
        let serving: HashSet<IpAddr> = state
            .endpoints
            .get(name)
            .into_iter()
            .flat_map(|e| e.iter())
            .filter(|e| e.ready || e.serving)
            .map(|e| e.ip)
            .collect();
        for vip in vips(svc) {
            by_vip.insert((vip, svc.port), serving.clone());
        }
        if let Some(np) = svc.node_port {
            by_node_port.insert(np, serving);
        }
    }
    let mut out = BTreeSet::new();
    for f in flows {
        if by_vip
            .get(&(f.orig_dst, f.orig_dport))
            .is_some_and(|eps| !eps.contains(&f.reply_src))
        {
            out.insert(Deletion {
                orig_dst: Some(f.orig_dst),
                dport: f.orig_dport,
                reply_src: f.reply_src,
            });
        }
        if by_node_port
            .get(&f.orig_dport)
            .is_some_and(|eps| !eps.contains(&f.reply_src))
        {
            out.insert(Deletion {
                orig_dst: None,
                dport: f.orig_dport,
                reply_src: f.reply_src,
            });
        }
    }
    out.into_iter().collect()
}

/// Is there a UDP service now or at the last sync? Without one nothing can be stale, and the listing
/// is skipped.
pub(crate) fn worth_listing(now: &UdpTargets, previous: &UdpTargets) -> bool {
    !now.is_empty() || !previous.is_empty()
}

fn family_arg(family: Family) -> &'static str {
    match family {
        Family::V4 => "ipv4",
        Family::V6 => "ipv6",
    }
}

/// `conntrack -L` arguments: the family's UDP entries.
pub(crate) fn list_args(family: Family) -> [&'static str; 5] {
    ["-L", "-f", family_arg(family), "-p", "udp"]
}

/// `conntrack -D` arguments for one deletion.
pub(crate) fn args(family: Family, d: &Deletion) -> Vec<String> {
    let mut a = vec![
        "-D".to_string(),
        "-f".into(),
        family_arg(family).into(),
        "-p".into(),
        "udp".into(),
    ];
    if let Some(dst) = d.orig_dst {
        a.extend(["--orig-dst".into(), dst.to_string()]);
    }
    a.extend(["--orig-port-dst".into(), d.dport.to_string()]);
    a.extend(["--reply-src".into(), d.reply_src.to_string()]);
    a
}

/// Parses `... N flow entries have been deleted.` from conntrack's stderr.
pub(crate) fn deleted_count(stderr: &str) -> u64 {
    stderr
        .lines()
        .filter(|l| l.contains("have been deleted"))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let i = words.iter().position(|w| *w == "flow")?;
            words.get(i.checked_sub(1)?)?.parse::<u64>().ok()
        })
        .sum()
}

fn failed(args: String, out: &crate::exec::Output) -> ToolError {
    ToolError::Failed {
        program: "conntrack".into(),
        args,
        code: out.code,
        stderr: out.stderr.trim().to_string(),
    }
}

/// Whether the `conntrack` binary runs at all (the daemon names a missing one at start).
pub(crate) async fn check() -> Result<(), ToolError> {
    exec("conntrack", &["--version"], None).await.map(drop)
}

/// Lists the family's UDP entries.
pub(crate) async fn list(family: Family) -> Result<Vec<Flow>, ToolError> {
    let a = list_args(family);
    let out = exec("conntrack", &a, None).await?;
    if !out.success {
        return Err(failed(a.join(" "), &out));
    }
    Ok(parse_flows(&out.stdout))
}

/// Runs the deletions; returns how many flows the kernel removed. conntrack exits 1 when nothing
/// matched (the flow may have expired since the listing), which is not an error.
pub(crate) async fn delete(family: Family, deletions: &[Deletion]) -> Result<u64, ToolError> {
    let mut total = 0;
    for d in deletions {
        let a = args(family, d);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = exec("conntrack", &refs, None).await?;
        if !out.success && !out.stderr.contains("0 flow entries") {
            return Err(failed(a.join(" "), &out));
        }
        total += deleted_count(&out.stderr);
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
