//! One service port as elements of the maps layout's sets and maps, with the same decisions as
//! upstream's per-service loop (`super::super::service`): which keys dispatch, to which endpoints,
//! which get the masquerade mark, which are rejected or dropped for having no endpoints, which are
//! source-restricted.

use std::net::IpAddr;

use super::*;
use crate::config::{DetectLocal, RenderConfig};
use crate::model::{Categorized, Endpoint, NodeFacts, ServicePort, categorize};

/// The elements gathered so far and the dispatch rules they need.
pub(super) struct Facts<'a> {
    node: &'a NodeFacts,
    cfg: &'a RenderConfig,
    /// Whether cluster-IP traffic is ever marked (masqueradeAll, or a local-traffic detector).
    masq_cluster: bool,
    /// The ClientIP affinity timeout of the port being added.
    affinity: Option<u32>,
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

    fn add(&mut self, set: &str, key: Vec<String>) {
        self.elements.push(MapsElement {
            set: set.to_string(),
            key,
            value: Vec::new(),
        });
    }

    /// `key` dispatches to `eps` through `group`: the key in the set of its endpoint count, one map
    /// element per slot.
    fn slots(&mut self, group: Group, proto: &'static str, key: &[String], eps: &[Endpoint]) {
        if eps.is_empty() {
            return;
        }
        self.add(&group.set(eps.len()), key.to_vec());
        for (slot, ep) in eps.iter().enumerate() {
            let mut k = key.to_vec();
            k.push(slot.to_string());
            self.elements.push(MapsElement {
                set: group.map(),
                key: k,
                value: vec![ep.ip.to_string(), ep.port.to_string()],
            });
        }
        self.in_use.insert((group, proto, eps.len()));
        if let Some(t) = self.affinity {
            let g = if group.by_port() {
                Group::PortAffinity
            } else {
                Group::Affinity
            };
            self.add(&g.set(t as usize), key.to_vec());
            self.in_use.insert((g, proto, t as usize));
        }
    }

    pub(super) fn add_port(&mut self, svc: &ServicePort, eps: &[Endpoint]) {
        let cat = categorize(eps, svc, self.node);
        let p = Plan::new(svc, &cat);
        self.affinity = svc.session_affinity;
        let port = svc.port.to_string();
        let key = |ip: &IpAddr| vec![ip.to_string(), p.proto.to_string(), port.clone()];

        self.add(
            super::super::naming::CLUSTER_IPS,
            vec![svc.cluster_ip.to_string()],
        );
        let ck = key(&svc.cluster_ip);
        if p.has_internal {
            let eps = if svc.internal_policy_local {
                &cat.local
            } else {
                &cat.cluster
            };
            self.slots(Group::Addr, p.proto, &ck, eps);
            if self.masq_cluster {
                self.add(MASQ_CLUSTER, ck);
            }
        } else {
            self.add(p.no_endpoint(false), ck);
        }

        for ip in svc.external_ips.iter().chain(&svc.load_balancer_vips) {
            self.external(&p, &cat, &key(ip), Group::Addr);
        }
        if !svc.load_balancer_vips.is_empty() && svc.source_ranges.is_some() {
            self.firewall(svc, &key);
        }
        if let Some(np) = svc.node_port {
            self.external(&p, &cat, &[p.proto.to_string(), np.to_string()], Group::Port);
        }
        for ep in &cat.all_reachable {
            self.add(HAIRPIN, vec![ep.ip.to_string(), ep.ip.to_string()]);
        }
    }

    /// An external key (external IP, LB IP: `Group::Addr`; node port: `Group::Port`): upstream's
    /// external chain as elements.
    fn external(&mut self, p: &Plan, cat: &Categorized, key: &[String], group: Group) {
        let by_port = group.by_port();
        if p.has_endpoints {
            let (masq, short, origin) = if by_port {
                (NP_MASQ, Group::PortShort, NP_LOCAL_ORIGIN)
            } else {
                (MASQ_EXTERNAL, Group::AddrShort, LOCAL_ORIGIN)
            };
            if !p.etp_local {
                self.add(masq, key.to_vec());
                if p.has_external {
                    self.slots(group, p.proto, key, &cat.cluster);
                }
            } else {
                // Pods and the node itself reach every endpoint; the node's traffic is masqueraded.
                self.slots(short, p.proto, key, &cat.cluster);
                self.add(origin, key.to_vec());
                if p.has_external {
                    self.slots(group, p.proto, key, &cat.local);
                }
            }
        }
        if !p.has_external {
            self.add(p.no_endpoint(by_port), key.to_vec());
        }
    }

    /// loadBalancerSourceRanges: each LB IP key is protected; its allowed sources (and the LB IPs
    /// themselves when a range holds a node IP: a node-local VIP loops back with the VIP as source).
    /// No allowed source at all drops everything (svcnet fails closed).
    fn firewall(&mut self, svc: &ServicePort, key: &dyn Fn(&IpAddr) -> Vec<String>) {
        let ranges = svc.source_ranges.as_deref().unwrap_or_default();
        let mut sources: Vec<String> = ranges
            .iter()
            .filter(|c| self.cfg.family.matches(&c.addr()))
            .map(|c| c.trunc().to_string())
            .collect();
        let allow_from_node = ranges
            .iter()
            .any(|c| self.node.ips.iter().any(|ip| c.contains(ip)));
        if allow_from_node {
            sources.extend(svc.load_balancer_vips.iter().map(ToString::to_string));
        }
        for vip in &svc.load_balancer_vips {
            let k = key(vip);
            for src in &sources {
                let mut allow = k.clone();
                allow.push(src.clone());
                self.add(FW_ALLOW, allow);
            }
            self.add(FW_PROTECTED, k);
        }
    }
}
