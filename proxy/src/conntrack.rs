//! UDP conntrack cleanup after a sync. UDP has no connection end, so a conntrack entry keeps sending a
//! client's datagrams to the endpoint chosen first even after that endpoint left the service; and an
//! entry created while the service had no endpoints keeps them unanswered. Both are deleted.
//!
//! What is stale is computed purely ([`stale_flows`]) from the previous and the new state; the deletion
//! uses the `conntrack` CLI from conntrack-tools (a netlink implementation would avoid the process, but
//! the CLI is what every node image has and it filters in the kernel the same way).

use std::collections::BTreeSet;
use std::net::IpAddr;

use crate::iptables::{IptablesError, exec};
use crate::model::{Endpoints, Family, Protocol, ProxyState, ServicePort};

/// One `conntrack -D` filter.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deletion {
    /// Original destination address; `None` for NodePort flows (any local address).
    pub orig_dst: Option<IpAddr>,
    /// Original destination port (service port or nodePort).
    pub dport: u16,
    /// Reply source = the endpoint the flow was DNATed to; `None`: every flow to the destination.
    pub reply_src: Option<IpAddr>,
}

/// Endpoint addresses that still receive traffic (ready, or serving while terminating).
fn serving(eps: Option<&Endpoints>) -> BTreeSet<IpAddr> {
    eps.into_iter()
        .flat_map(|e| e.iter())
        .filter(|e| e.ready || e.serving)
        .map(|e| e.ip)
        .collect()
}

fn vips(svc: &ServicePort) -> Vec<IpAddr> {
    let mut v = vec![svc.cluster_ip];
    v.extend(svc.external_ips.iter().copied());
    v.extend(svc.load_balancer_vips.iter().copied());
    v
}

/// The part of a state [`stale_flows`] reads (UDP service ports and their endpoints): what a sync keeps
/// for the next one, instead of a copy of everything.
pub fn udp_only(state: &ProxyState) -> ProxyState {
    let services: std::collections::BTreeMap<_, _> = state
        .services
        .iter()
        .filter(|(_, s)| s.name.protocol == Protocol::Udp)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let endpoints = services
        .keys()
        .filter_map(|k| state.endpoints.get(k).map(|e| (k.clone(), e.clone())))
        .collect();
    ProxyState {
        services,
        endpoints,
        errors: vec![],
    }
}

/// The UDP flows to delete after moving from `prev` to `now`:
/// - a serving endpoint left a UDP service port (or the port is gone): flows to each service address
///   and the nodePort whose reply comes from that endpoint;
/// - a UDP service port got its first serving endpoint: every flow to its addresses and nodePort
///   (those were created while packets were rejected).
pub fn stale_flows(prev: &ProxyState, now: &ProxyState) -> Vec<Deletion> {
    let mut out = BTreeSet::new();
    for (name, old) in prev
        .services
        .iter()
        .filter(|(_, s)| s.name.protocol == Protocol::Udp)
    {
        let before = serving(prev.endpoints.get(name));
        let after = if now.services.contains_key(name) {
            serving(now.endpoints.get(name))
        } else {
            BTreeSet::new()
        };
        for ep in before.difference(&after) {
            for vip in vips(old) {
                out.insert(Deletion {
                    orig_dst: Some(vip),
                    dport: old.port,
                    reply_src: Some(*ep),
                });
            }
            if let Some(np) = old.node_port {
                out.insert(Deletion {
                    orig_dst: None,
                    dport: np,
                    reply_src: Some(*ep),
                });
            }
        }
    }
    for (name, svc) in now
        .services
        .iter()
        .filter(|(_, s)| s.name.protocol == Protocol::Udp)
    {
        let had = prev.services.contains_key(name) && !serving(prev.endpoints.get(name)).is_empty();
        if had || serving(now.endpoints.get(name)).is_empty() {
            continue;
        }
        for vip in vips(svc) {
            out.insert(Deletion {
                orig_dst: Some(vip),
                dport: svc.port,
                reply_src: None,
            });
        }
        if let Some(np) = svc.node_port {
            out.insert(Deletion {
                orig_dst: None,
                dport: np,
                reply_src: None,
            });
        }
    }
    out.into_iter().collect()
}

/// `conntrack -D` arguments for one deletion.
pub fn args(family: Family, d: &Deletion) -> Vec<String> {
    let mut a = vec!["-D".to_string(), "-f".into()];
    a.push(
        match family {
            Family::V4 => "ipv4",
            Family::V6 => "ipv6",
        }
        .into(),
    );
    a.extend(["-p".into(), "udp".into()]);
    if let Some(dst) = d.orig_dst {
        a.extend(["--orig-dst".into(), dst.to_string()]);
    }
    a.extend(["--orig-port-dst".into(), d.dport.to_string()]);
    if let Some(src) = d.reply_src {
        a.extend(["--reply-src".into(), src.to_string()]);
    }
    a
}

/// Parses `... N flow entries have been deleted.` from conntrack's stderr.
pub fn deleted_count(stderr: &str) -> u64 {
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

/// Runs the deletions; returns how many flows the kernel removed. conntrack exits 1 when nothing
/// matched, which is not an error.
pub async fn delete(family: Family, deletions: &[Deletion]) -> Result<u64, IptablesError> {
    let mut total = 0;
    for d in deletions {
        let a = args(family, d);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = exec("conntrack", &refs, None).await?;
        if !out.success && !out.stderr.contains("0 flow entries") {
            return Err(IptablesError::Failed {
                program: "conntrack".into(),
                args: a.join(" "),
                code: out.code,
                stderr: out.stderr.trim().to_string(),
            });
        }
        total += deleted_count(&out.stderr);
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
