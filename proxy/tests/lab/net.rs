//! The lab's topology: which namespace links to which, with what names and addresses (the
//! namespaces are [`svcnet_netns::Netns`] guards: uniquely named, never linked to the root namespace,
//! deleted on drop; the wiring steps are `svcnet_netns::link`'s).

use svcnet_netns::{Netns, NetnsError, link};

use super::{BRIDGE_IP, BRIDGE_IP6, CLIENT_IP, CLIENT_IP2, CLIENT_IP6, NODE_IP, NODE_IP6};

/// Node: eth0 toward the client, br0 for pods, forwarding on; client: two addresses, default route
/// via the node (so LB VIPs, external IPs and cluster IPs are routed to the node, as GCE does).
pub fn wire_node_and_client(node: &Netns, client: &Netns) -> Result<(), NetnsError> {
    let (n, c) = (node.name(), client.name());
    link::veth(n, "eth0", c, "eth0")?;
    link::addr(n, "eth0", &format!("{NODE_IP}/24"))?;
    link::bridge(n, "br0")?;
    link::addr(n, "br0", &format!("{BRIDGE_IP}/24"))?;
    // The node needs a route for service IPs before DNAT (like any real node's default route).
    link::route(n, "default", Some(CLIENT_IP), Some("eth0"))?;
    link::forward_ipv4(n)?;
    link::addr(c, "eth0", &format!("{CLIENT_IP}/24"))?;
    link::addr(c, "eth0", &format!("{CLIENT_IP2}/24"))?;
    link::route(c, "default", Some(NODE_IP), None)
}

/// A pod behind br0 with `ip`/24 and the bridge as gateway; its port hairpins, as kubelet's do.
pub fn wire_pod(node: &Netns, pod: &Netns, index: usize, pod_ip: &str) -> Result<(), NetnsError> {
    let host_if = format!("vp{index}");
    link::veth(node.name(), &host_if, pod.name(), "eth0")?;
    link::attach(node.name(), "br0", &host_if)?;
    link::hairpin(node.name(), &host_if)?;
    link::addr(pod.name(), "eth0", &format!("{pod_ip}/24"))?;
    link::route(pod.name(), "default", Some(BRIDGE_IP), None)
}

/// IPv6 on top of [`wire_node_and_client`] (dual-stack labs): the same shape with ULA addresses
/// (`nodad`, see `link::addr`), forwarding on.
pub fn wire_node_and_client_v6(node: &Netns, client: &Netns) -> Result<(), NetnsError> {
    let (n, c) = (node.name(), client.name());
    link::forward_ipv6(n)?;
    link::addr(n, "eth0", &format!("{NODE_IP6}/64"))?;
    link::addr(n, "br0", &format!("{BRIDGE_IP6}/64"))?;
    // As for IPv4: service IPs need a route on the node before DNAT picks the pod.
    link::route(n, "default", Some(CLIENT_IP6), Some("eth0"))?;
    link::addr(c, "eth0", &format!("{CLIENT_IP6}/64"))?;
    link::route(c, "default", Some(NODE_IP6), None)
}

/// A pod's IPv6 address (after [`wire_pod`]) and its default route via the bridge. Sockets bound to
/// `[::]` in this pod are IPv6-only (`bindv6only`), so the pod's IPv4 listeners stay as they are.
pub fn wire_pod_v6(pod: &Netns, pod_ip6: &str) -> Result<(), NetnsError> {
    link::sysctl(pod.name(), "net.ipv6.bindv6only", "1")?;
    link::addr(pod.name(), "eth0", &format!("{pod_ip6}/64"))?;
    link::route(pod.name(), "default", Some(BRIDGE_IP6), None)
}
