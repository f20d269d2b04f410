//! This node's facts from its Node object and the node flags: name, topology labels, podCIDRs and
//! addresses. Pure, like the rest of the model; the daemon and the offline commands both use it.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::Node;

use super::NodeFacts;
use super::ip::{parse_cidr_sloppy, parse_ip_sloppy};

impl NodeFacts {
    /// Facts from a Node object: labels, podCIDRs, InternalIP addresses (the ones that parse).
    pub fn from_node(node: &Node) -> NodeFacts {
        let mut facts = NodeFacts {
            name: node.metadata.name.clone().unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            ..Default::default()
        };
        if let Some(spec) = &node.spec {
            let cidrs = spec
                .pod_cidrs
                .clone()
                .filter(|c| !c.is_empty())
                .or_else(|| spec.pod_cidr.clone().map(|c| vec![c]));
            facts.pod_cidrs = cidrs
                .unwrap_or_default()
                .iter()
                .filter_map(|c| parse_cidr_sloppy(c))
                .collect();
        }
        if let Some(addrs) = node.status.as_ref().and_then(|s| s.addresses.as_ref()) {
            for a in addrs.iter().filter(|a| a.type_ == "InternalIP") {
                if let Some(ip) = parse_ip_sloppy(&a.address) {
                    facts.ips.push(ip);
                }
            }
        }
        facts.interface_ips = facts.ips.clone();
        facts
    }

    /// The facts of `node` (when known) with the flags laid over: a non-empty `name` wins, and
    /// `extra_ips` (`--node-ip`) are added to the Node's addresses.
    pub fn with_flags(node: Option<&Node>, name: &str, extra_ips: &[IpAddr]) -> NodeFacts {
        let mut facts = node.map(NodeFacts::from_node).unwrap_or_default();
        if !name.is_empty() {
            facts.name = name.to_string();
        }
        for ip in extra_ips {
            if !facts.ips.contains(ip) {
                facts.ips.push(*ip);
                facts.interface_ips.push(*ip);
            }
        }
        facts
    }
}
