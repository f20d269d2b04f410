//! Wiring of the differential test's namespaces: a bridge in the control plane's namespace, one veth
//! per node into it, and the same node-side setup in both nodes (`eth0` with the node's
//! addresses and default routes, `br0` with the pod CIDRs' gateways), so the proxies see identical
//! nodes. Only the `api0` address differs, and no rule names it. The steps are `svcnet_netns::link`'s.

use svcnet_netns::{Netns, NetnsError, link};

use super::{NODE_IP, NODE_IP6};

/// `br-api` in the control plane's namespace, holding the API server's address.
pub fn wire_api_bridge(cp: &Netns, api_ip: &str) -> Result<(), NetnsError> {
    link::bridge(cp.name(), "br-api")?;
    link::addr(cp.name(), "br-api", &format!("{api_ip}/24"))
}

/// One node: `api0` (toward the API server, `api_side` on the bridge) and the identical node setup.
pub fn wire_node(cp: &Netns, node: &Netns, api_side: &str, api0_ip: &str) -> Result<(), NetnsError> {
    let n = node.name();
    link::veth(cp.name(), api_side, n, "api0")?;
    link::attach(cp.name(), "br-api", api_side)?;
    link::addr(n, "api0", &format!("{api0_ip}/24"))?;
    // A veth pair inside the node (the kernel may lack the dummy driver): eth0 carries the addresses.
    link::veth(n, "eth0", n, "eth0-peer")?;
    link::addr(n, "eth0", &format!("{NODE_IP}/24"))?;
    link::addr(n, "eth0", &format!("{NODE_IP6}/64"))?;
    link::route(n, "default", Some("10.140.0.1"), Some("eth0"))?;
    link::route(n, "default", Some("fd00:140::1"), Some("eth0"))?;
    link::bridge(n, "br0")?;
    link::addr(n, "br0", "10.76.1.1/24")?;
    link::addr(n, "br0", "fd00:76:1::1/64")?;
    link::forward_ipv4(n)?;
    link::forward_ipv6(n)
}
