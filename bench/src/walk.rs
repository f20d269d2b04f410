//! Counts the nat dispatch rules a new TCP connection is compared against before it reaches its
//! service rule: KUBE-SERVICES plus any KUBE-DST-* chains it descends into. This is the
//! deterministic part of P1 (no timing noise) and predicts the measured cost ratio.

use std::collections::HashMap;
use std::net::IpAddr;

use ipnet::IpNet;
use svcnet_proxy::iptables::render::naming::{DST_PREFIX, KUBE_SERVICES};
use svcnet_proxy::iptables::render::{Chain, Rendered};

pub struct Walker<'a> {
    chains: HashMap<&'a str, &'a Chain>,
}

/// What one dispatch rule tests, as far as the walk needs it.
enum Test {
    /// `-d <prefix> -j KUBE-DST-*`: descend when the destination is inside.
    Bucket(IpNet, String),
    /// `-d <ip> ... --dport <port>`: a service rule.
    Service(IpAddr, u16),
    /// Anything else (the trailing NodePorts jump): evaluated, never matches a cluster IP here.
    Other,
}

fn arg<'r>(words: &[&'r str], flag: &str) -> Option<&'r str> {
    let i = words.iter().position(|w| *w == flag)?;
    words.get(i + 1).copied()
}

fn classify(rule: &str) -> Test {
    let words: Vec<&str> = rule.split_whitespace().collect();
    let (Some(d), target) = (arg(&words, "-d"), arg(&words, "-j")) else {
        return Test::Other;
    };
    if let Some(t) = target.filter(|t| t.starts_with(DST_PREFIX))
        && let Ok(net) = d.parse::<IpNet>()
    {
        return Test::Bucket(net, t.to_string());
    }
    match (d.parse::<IpAddr>(), arg(&words, "--dport").map(str::parse::<u16>)) {
        (Ok(ip), Some(Ok(port))) => Test::Service(ip, port),
        _ => Test::Other,
    }
}

impl<'a> Walker<'a> {
    pub fn new(r: &'a Rendered) -> Walker<'a> {
        Walker {
            chains: r.nat.iter().map(|c| (c.name.as_str(), c.as_ref())).collect(),
        }
    }

    /// Rules evaluated for a new connection to `dst:dport`, including the matching one; `None` when
    /// no service rule matches.
    pub fn rules_walked(&self, dst: IpAddr, dport: u16) -> Option<usize> {
        let mut count = 0;
        self.walk(KUBE_SERVICES, dst, dport, &mut count).then_some(count)
    }

    fn walk(&self, chain: &str, dst: IpAddr, dport: u16, count: &mut usize) -> bool {
        let Some(c) = self.chains.get(chain) else {
            return false;
        };
        for rule in &c.rules {
            *count += 1;
            match classify(rule) {
                Test::Bucket(net, target) if net.contains(&dst) && self.walk(&target, dst, dport, count) => {
                    return true;
                }
                Test::Service(ip, port) if ip == dst && port == dport => return true,
                _ => {}
            }
        }
        false
    }
}

#[cfg(test)]
mod tests;
