//! One service port as elements of the maps layout's sets and maps, with the same decisions as
//! upstream's per-service loop (`super::super::service`): which keys dispatch, to which endpoints,
//! which get the masquerade mark, which are rejected or dropped for having no endpoints, which are
//! source-restricted.

use std::net::IpAddr;

use ipnet::IpNet;

use super::*;
use crate::config::{DetectLocal, RenderConfig};
use crate::model::{Categorized, Endpoint, NodeFacts, ServicePort, categorize};

/// The elements gathered so far and the dispatch rules they need.
pub(super) struct Facts<'a> {
    node: &'a NodeFacts,
    cfg: &'a RenderConfig,
    /// Whether cluster-IP traffic is ever marked (masqueradeAll, or a local-traffic detector).
    masq_cluster: bool,
    /// The port being added, when it has ClientIP affinity.
    affinity: Option<Sticky>,
    elements: Vec<MapsElement>,
    in_use: InUse,
}

/// What upstream decides before writing a service port.
struct Plan {
    proto: &'static str,
    has_endpoints: bool,
    has_internal: bool,
    has_external: bool,
    etp_local: bool,
}

impl Plan {
    fn new(svc: &ServicePort, cat: &Categorized) -> Plan {
        let has_endpoints = cat.has_any;
        let has_local = !cat.local.is_empty();
        Plan {
            proto: svc.name.protocol.as_str(),
            has_endpoints,
            has_internal: has_endpoints && (!svc.internal_policy_local || has_local),
            has_external: has_endpoints && (!svc.external_policy_local || has_local),
            etp_local: svc.external_policy_local,
        }
    }

    /// The no-endpoint set for traffic without endpoints: reject when the service has none at all,
    /// drop when only the policy's (local) ones are missing.
    fn no_endpoint(&self, by_port: bool) -> &'static str {
        match (self.has_endpoints, by_port) {
            (false, false) => NO_ENDPOINT_REJECT,
            (true, false) => NO_ENDPOINT_DROP,
            (false, true) => NP_NO_ENDPOINT_REJECT,
            (true, true) => NP_NO_ENDPOINT_DROP,
        }
    }
}

fn has_detector(cfg: &RenderConfig) -> bool {
    match &cfg.detect_local {
        DetectLocal::None => false,
        DetectLocal::ClusterCidr(c) | DetectLocal::NodeCidr(c) => {
            c.iter().any(|c| cfg.family.matches(&c.addr()))
        }
        DetectLocal::BridgeInterface(_) | DetectLocal::InterfaceNamePrefix(_) => true,
    }
}

/// A count or slot number as the element holds it (a port has far fewer than 2^32 endpoints).
fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl<'a> Facts<'a> {
    pub(super) fn new(node: &'a NodeFacts, cfg: &'a RenderConfig) -> Facts<'a> {
        Facts {
            node,
            cfg,
            masq_cluster: cfg.masquerade_all || has_detector(cfg),
            affinity: None,
            elements: Vec::new(),
            in_use: InUse::new(),
        }
    }

    pub(super) fn finish(self) -> (Vec<MapsElement>, InUse) {
        (self.elements, self.in_use)
    }

    fn add(&mut self, set: SetName, key: Key) {
        self.elements.push(MapsElement {
            set,
            key,
            value: None,
        });
    }

    /// `key` dispatches to `eps` through `group`: the key in the set of its endpoint count, one
    /// element per slot in the map of that count.
    fn slots(&mut self, group: Group, proto: &'static str, key: Key, eps: &[Endpoint]) {
        if eps.is_empty() {
            return;
        }
        let n = count(eps.len());
        self.add(SetName::Count(group, n), key);
        for b in group.buckets(eps.len()).into_iter().flatten() {
            self.add(SetName::Bucket(group, b), key);
        }
        for (slot, ep) in eps.iter().enumerate() {
            self.elements.push(MapsElement {
                set: SetName::Map(group, n),
                key: key.with(Part::Slot(count(slot))),
                value: Some((ep.ip, ep.port)),
            });
        }
        self.in_use.insert((group, proto, eps.len()));
        if let Some(port) = self.affinity {
            let by_port = group.by_port();
            self.add(SetName::StickyKey { by_port, port }, key);
            self.add(SetName::StickyRecord { by_port, port }, key);
            self.in_use.insert((Group::Affinity, proto, 0));
            self.in_use.insert((Group::Sticky(port), proto, 0));
        }
    }

    pub(super) fn add_port(&mut self, svc: &ServicePort, eps: &[Endpoint]) {
        let cat = categorize(eps, svc, self.node);
        let p = Plan::new(svc, &cat);
        self.affinity = svc.session_affinity.map(|t| Sticky::new(&svc.name, t));
        let proto = Part::Proto(svc.name.protocol);
        let port = Part::Port(svc.port);
        let key = |ip: &IpAddr| Key::new(&[Part::Addr(*ip), proto, port]);

        self.add(
            SetName::Fixed(super::super::naming::CLUSTER_IPS),
            Key::new(&[Part::Addr(svc.cluster_ip)]),
        );
        let ck = key(&svc.cluster_ip);
        if p.has_internal {
            let eps = if svc.internal_policy_local {
                &cat.local
            } else {
                &cat.cluster
            };
            self.slots(Group::Addr, p.proto, ck, eps);
            if self.masq_cluster {
                self.add(SetName::Fixed(MASQ_CLUSTER), ck);
            }
        } else {
            self.add(SetName::Fixed(p.no_endpoint(false)), ck);
        }

        for ip in svc.external_ips.iter().chain(&svc.load_balancer_vips) {
            self.external(&p, &cat, key(ip), Group::Addr);
        }
        if !svc.load_balancer_vips.is_empty() && svc.source_ranges.is_some() {
            self.firewall(svc, &key);
        }
        if let Some(np) = svc.node_port {
            self.external(&p, &cat, Key::new(&[proto, Part::Port(np)]), Group::Port);
        }
        for ep in &cat.all_reachable {
            self.add(
                SetName::Fixed(HAIRPIN),
                Key::new(&[Part::Addr(ep.ip), Part::Addr(ep.ip)]),
            );
        }
    }

    /// An external key (external IP, LB IP: `Group::Addr`; node port: `Group::Port`): upstream's
    /// external chain as elements.
    fn external(&mut self, p: &Plan, cat: &Categorized, key: Key, group: Group) {
        let by_port = group.by_port();
        if p.has_endpoints {
            let (masq, short, origin) = if by_port {
                (NP_MASQ, Group::PortShort, NP_LOCAL_ORIGIN)
            } else {
                (MASQ_EXTERNAL, Group::AddrShort, LOCAL_ORIGIN)
            };
            if !p.etp_local {
                self.add(SetName::Fixed(masq), key);
                if p.has_external {
                    self.slots(group, p.proto, key, &cat.cluster);
                }
            } else {
                // Pods and the node itself reach every endpoint; the node's traffic is masqueraded.
                self.slots(short, p.proto, key, &cat.cluster);
                self.add(SetName::Fixed(origin), key);
                if p.has_external {
                    self.slots(group, p.proto, key, &cat.local);
                }
            }
        }
        if !p.has_external {
            self.add(SetName::Fixed(p.no_endpoint(by_port)), key);
        }
    }

    /// loadBalancerSourceRanges: each LB IP key is protected; its allowed sources (and the LB IPs
    /// themselves when a range holds a node IP: a node-local VIP loops back with the VIP as source).
    /// No allowed source at all drops everything (svcnet fails closed).
    fn firewall(&mut self, svc: &ServicePort, key: &dyn Fn(&IpAddr) -> Key) {
        let ranges = svc.source_ranges.as_deref().unwrap_or_default();
        let mut sources: Vec<Part> = ranges
            .iter()
            .filter(|c| self.cfg.family.matches(&c.addr()))
            .map(|c| Part::Net(c.trunc()))
            .collect();
        let allow_from_node = ranges
            .iter()
            .any(|c| self.node.ips.iter().any(|ip| c.contains(ip)));
        if allow_from_node {
            sources.extend(svc.load_balancer_vips.iter().map(|ip| Part::Addr(*ip)));
        }
        let sources = uncovered(sources);
        for vip in &svc.load_balancer_vips {
            let k = key(vip);
            for src in &sources {
                self.add(SetName::Fixed(FW_ALLOW), k.with(*src));
            }
            self.add(SetName::Fixed(FW_PROTECTED), k);
        }
    }
}

/// The sources no other source covers. `@fw-allow` is an interval set, which refuses overlapping
/// elements of one key (`0.0.0.0/0` beside the LB IP itself, or nested user ranges) and with them the
/// whole transaction; a covered source allows nothing the covering one does not.
fn uncovered(mut sources: Vec<Part>) -> Vec<Part> {
    let net = |p: &Part| match p {
        Part::Net(n) => Some(*n),
        Part::Addr(a) => Some(IpNet::from(*a)),
        _ => None,
    };
    sources.sort_by_key(|p| net(p).map(|n| n.prefix_len()));
    let mut kept: Vec<Part> = Vec::with_capacity(sources.len());
    for s in sources {
        let Some(n) = net(&s) else { continue };
        if !kept.iter().filter_map(net).any(|k| k.contains(&n)) {
            kept.push(s);
        }
    }
    kept
}
