//! The veth/bridge wiring of the lab's namespaces (the namespaces themselves are
//! [`svcnet_netns::Netns`] guards: uniquely named, never linked to the root namespace, deleted on drop).

use svcnet_netns::Netns;

use super::{BRIDGE_IP, BRIDGE_IP6, CLIENT_IP, CLIENT_IP2, CLIENT_IP6, NODE_IP, NODE_IP6};

fn ip(ns: &Netns, args: &str) {
    let words: Vec<&str> = std::iter::once("ip").chain(args.split_whitespace()).collect();
    ns.ok(&words);
}

/// Node: eth0 toward the client, br0 for pods, forwarding on; client: two addresses, default route
/// via the node (so LB VIPs, external IPs and cluster IPs are routed to the node, as GCE does).
pub fn wire_node_and_client(node: &Netns, client: &Netns) {
    ip(
        node,
        &format!("link add eth0 type veth peer name eth0 netns {}", client.name()),
    );
    ip(node, &format!("addr add {NODE_IP}/24 dev eth0"));
    ip(node, "link set eth0 up");
    ip(node, "link add br0 type bridge");
    ip(node, &format!("addr add {BRIDGE_IP}/24 dev br0"));
    ip(node, "link set br0 up");
    // The node needs a route for service IPs before DNAT (like any real node's default route).
    ip(node, &format!("route add default via {CLIENT_IP} dev eth0"));
    node.ok(&["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"]);
    ip(client, &format!("addr add {CLIENT_IP}/24 dev eth0"));
    ip(client, &format!("addr add {CLIENT_IP2}/24 dev eth0"));
    ip(client, "link set eth0 up");
    ip(client, &format!("route add default via {NODE_IP}"));
}

/// A pod behind br0 with `ip`/24 and the bridge as gateway.
pub fn wire_pod(node: &Netns, pod: &Netns, index: usize, pod_ip: &str) {
    let host_if = format!("vp{index}");
    ip(
        node,
        &format!("link add {host_if} type veth peer name eth0 netns {}", pod.name()),
    );
    ip(node, &format!("link set {host_if} master br0 up"));
    // A pod reaching itself through a service IP comes back out of its own bridge port (kubelet sets
    // the same hairpin mode on its bridge ports).
    ip(node, &format!("link set {host_if} type bridge_slave hairpin on"));
    ip(pod, &format!("addr add {pod_ip}/24 dev eth0"));
    ip(pod, "link set eth0 up");
    ip(pod, &format!("route add default via {BRIDGE_IP}"));
}

/// IPv6 on top of [`wire_node_and_client`] (dual-stack labs): the same shape with ULA addresses, `nodad`
/// so they are usable at once (no duplicate address detection on links the lab owns), forwarding on.
pub fn wire_node_and_client_v6(node: &Netns, client: &Netns) {
    node.ok(&["sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/forwarding"]);
    ip(node, &format!("addr add {NODE_IP6}/64 dev eth0 nodad"));
    ip(node, &format!("addr add {BRIDGE_IP6}/64 dev br0 nodad"));
    // As for IPv4: service IPs need a route on the node before DNAT picks the pod.
    ip(node, &format!("-6 route add default via {CLIENT_IP6} dev eth0"));
    ip(client, &format!("addr add {CLIENT_IP6}/64 dev eth0 nodad"));
    ip(client, &format!("-6 route add default via {NODE_IP6}"));
}

/// A pod's IPv6 address (after [`wire_pod`]) and its default route via the bridge. Sockets bound to
/// `[::]` in this pod are IPv6-only (`bindv6only`), so the pod's IPv4 listeners stay as they are.
pub fn wire_pod_v6(pod: &Netns, pod_ip6: &str) {
    pod.ok(&["sh", "-c", "echo 1 > /proc/sys/net/ipv6/bindv6only"]);
    ip(pod, &format!("addr add {pod_ip6}/64 dev eth0 nodad"));
    ip(pod, &format!("-6 route add default via {BRIDGE_IP6}"));
}
