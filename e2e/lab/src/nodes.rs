//! Node namespaces: `eth0` with the node IP (/32, gateway = the VPC router, like a GCE instance), a
//! `cbr0` bridge holding the node's pod CIDR, and the real svcnet-proxy running inside.

use std::path::Path;

use anyhow::Result;

use crate::netns;
use crate::procs;
use crate::state::{CLUSTER_CIDR, Node, State, VPC_IP};

/// Creates node `index` (1-based) and links it to the VPC router over `n<index>`.
pub fn create(st: &State, index: u32) -> Result<Node> {
    let node = Node {
        name: format!("node-{index}"),
        ns: format!("{}-node-{index}", st.prefix),
        ip: format!("10.128.0.{}", index + 1),
        index,
    };
    let vpc = st.vpc();
    netns::add(&node.ns)?;
    let link = format!("n{index}");
    netns::veth(&vpc, &link, &node.ns, "eth0")?;
    netns::ip(&vpc, &["addr", "add", &format!("{VPC_IP}/32"), "dev", &link])?;
    netns::ip(&vpc, &["route", "add", &format!("{}/32", node.ip), "dev", &link])?;
    netns::ip(
        &node.ns,
        &["addr", "add", &format!("{}/32", node.ip), "dev", "eth0"],
    )?;
    netns::ip(&node.ns, &["route", "add", VPC_IP, "dev", "eth0"])?;
    netns::ip(
        &node.ns,
        &["route", "add", "default", "via", VPC_IP, "dev", "eth0"],
    )?;
    netns::ip(&node.ns, &["link", "add", "cbr0", "type", "bridge"])?;
    netns::ip(
        &node.ns,
        &["addr", "add", &format!("{}/24", node.bridge_ip()), "dev", "cbr0"],
    )?;
    netns::ip(&node.ns, &["link", "set", "cbr0", "up"])?;
    Ok(node)
}

/// Starts svcnet-proxy in the node namespace.
pub fn start_proxy(dir: &Path, node: &Node) -> Result<u32> {
    let kubeconfig = dir.join("kubeconfig").display().to_string();
    let args: Vec<String> = [
        "run",
        "--kubeconfig",
        &kubeconfig,
        "--hostname-override",
        &node.name,
        "--cluster-cidr",
        CLUSTER_CIDR,
        "--iptables-min-sync-period",
        "500ms",
        "--iptables-sync-period",
        "30s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    procs::spawn(
        dir,
        &node.ns,
        &format!("proxy-{}", node.name),
        &procs::sibling("svcnet-proxy")?,
        &args,
    )
}
