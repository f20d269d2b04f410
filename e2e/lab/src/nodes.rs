//! Node namespaces: `eth0` with the node IP (/32, gateway = the VPC router, like a GCE instance), a
//! `cbr0` bridge holding the node's pod CIDR, and the real svcnet-proxy running inside; nodes join and
//! leave (`add-node`, `remove-node`) as a node pool scales.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::components::{self, Started};
use crate::state::{self, NODE_TAG, Node, State, VPC_IP, ZONE};
use crate::{cluster, manifest, netns, procs};

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

/// Registers the node as GKE would have it: a GCE instance (tag, internal and NAT IPs) and, as kubelet
/// with `--cloud-provider=external` does, a Node tainted until the cloud controller initialises it,
/// with the pod CIDR the node IPAM controller would assign.
pub fn register(st: &State, node: &Node) -> Result<()> {
    cluster::gce(
        st,
        "POST",
        "/_fake/instances",
        Some(&json!({
            "name": node.name, "zone": ZONE, "networkIP": node.ip,
            "natIP": format!("198.51.100.{}", node.index + 1),
            "tags": [NODE_TAG], "machineType": "e2-medium", "status": "RUNNING"
        })),
    )?;
    cluster::api(
        st,
        "POST",
        "/api/v1/nodes",
        Some(&json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node.name, "labels": {"kubernetes.io/hostname": node.name}},
            "spec": {
                "podCIDR": node.pod_cidr(), "podCIDRs": [node.pod_cidr()],
                "taints": [{"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}]
            },
            "status": {
                "addresses": [{"type": "InternalIP", "address": node.ip}, {"type": "Hostname", "address": node.name}],
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
            }
        })),
    )?;
    Ok(())
}

/// Starts svcnet-proxy in the node namespace with the lab overlay DaemonSet's command line.
pub fn start_proxy(dir: &Path, st: &mut State, docs: &[Value], node: &Node) -> Result<Started> {
    let fields = BTreeMap::from([
        ("spec.nodeName", node.name.clone()),
        ("metadata.name", format!("svcnet-proxy-{}", node.name)),
    ]);
    let l = manifest::launch(docs, manifest::PROXY, &dir.join("config"), &fields)?;
    cluster::write_files(&l.files)?;
    let bin = procs::sibling(&l.bin)?;
    components::launch(dir, st, &format!("proxy-{}", node.name), &node.ns, bin, l.args)
}

/// `svcnet-lab add-node`: a new node joins like a GKE node-pool scale-up (namespace, instance, Node,
/// proxy); returns once it is initialised, routed and its proxy synced.
pub fn add(dir: &Path) -> Result<()> {
    let mut st = state::load(dir)?;
    let docs = manifest::render(&st.overlay)?;
    let index = st.nodes.iter().map(|n| n.index).max().unwrap_or(0) + 1;
    let node = create(&st, index)?;
    st.nodes.push(node.clone());
    state::save(dir, &st)?;
    register(&st, &node)?;
    let proxy = start_proxy(dir, &mut st, &docs, &node)?;
    proxy.wait(dir, Duration::from_secs(60))?;
    cluster::wait_initialised(&st)?;
    println!("node/{} added ({})", node.name, node.ip);
    Ok(())
}

/// `svcnet-lab remove-node NAME`: like a node-pool scale-down: its pods go, the Node object and the
/// instance are deleted, then its proxy and namespace.
pub fn remove(dir: &Path, name: &str) -> Result<()> {
    let mut st = state::load(dir)?;
    let Some(node) = st.nodes.iter().find(|n| n.name == name).cloned() else {
        bail!("no node {name}");
    };
    let gone: Vec<_> = st.pods.iter().filter(|p| p.node == name).cloned().collect();
    for pod in &gone {
        netns::del(&pod.ns);
        println!("pod/{} deleted", pod.name);
    }
    st.pods.retain(|p| p.node != name);
    st.nodes.retain(|n| n.name != name);
    state::save(dir, &st)?;
    cluster::api(&st, "DELETE", &format!("/api/v1/nodes/{name}"), None)?;
    cluster::gce(&st, "DELETE", &format!("/_fake/instances/{ZONE}/{name}"), None)?;
    if let Some(p) = st.procs.remove(&format!("proxy-{name}")) {
        procs::kill(p.pid);
    }
    netns::del(&node.ns);
    let _ = netns::ip(&st.vpc(), &["link", "del", &format!("n{}", node.index)]);
    state::save(dir, &st)?;
    println!("node/{name} removed");
    Ok(())
}
