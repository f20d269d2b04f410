//! Wiring of the differential test's namespaces: a bridge in the control plane's namespace, one veth
//! per node into it, and the same node-side setup in both nodes (`eth0` with the node's
//! addresses and default routes, `br0` with the pod CIDRs' gateways), so the proxies see identical
//! nodes. Only the `api0` address differs, and no rule names it.

use svcnet_netns::Netns;

use super::{NODE_IP, NODE_IP6};

fn ip(ns: &Netns, args: &str) {
    let words: Vec<&str> = std::iter::once("ip").chain(args.split_whitespace()).collect();
    ns.ok(&words);
}

/// `br-api` in the control plane's namespace, holding the API server's address.
pub fn wire_api_bridge(cp: &Netns, api_ip: &str) {
    ip(cp, "link add br-api type bridge");
    ip(cp, &format!("addr add {api_ip}/24 dev br-api"));
    ip(cp, "link set br-api up");
    ip(cp, "link set lo up");
}

/// One node: `api0` (toward the API server, `api_side` on the bridge) and the identical node setup.
pub fn wire_node(cp: &Netns, node: &Netns, api_side: &str, api0_ip: &str) {
    ip(
        cp,
        &format!(
            "link add {api_side} type veth peer name api0 netns {}",
            node.name()
        ),
    );
    ip(cp, &format!("link set {api_side} master br-api up"));
    ip(node, "link set lo up");
    ip(node, &format!("addr add {api0_ip}/24 dev api0"));
    ip(node, "link set api0 up");
    // A veth pair inside the node (the kernel may lack the dummy driver): eth0 carries the addresses.
    ip(node, "link add eth0 type veth peer name eth0-peer");
    ip(node, "link set eth0-peer up");
    ip(node, &format!("addr add {NODE_IP}/24 dev eth0"));
    ip(node, &format!("addr add {NODE_IP6}/64 dev eth0 nodad"));
    ip(node, "link set eth0 up");
    ip(node, "route add default via 10.140.0.1 dev eth0");
    ip(node, "-6 route add default via fd00:140::1 dev eth0");
    ip(node, "link add br0 type bridge");
    ip(node, "addr add 10.76.1.1/24 dev br0");
    ip(node, "addr add fd00:76:1::1/64 dev br0 nodad");
    ip(node, "link set br0 up");
    node.ok(&["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"]);
    node.ok(&["sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/forwarding"]);
}
