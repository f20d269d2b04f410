//! Node namespaces: `eth0` with the node IP (/32, gateway = the VPC router, like a GCE instance), a
//! `cbr0` bridge holding the first address of the podCIDR node IPAM gave the Node, and the real
//! svcnet-proxy running inside; nodes join and leave (`add-node`, `remove-node`) as a node pool scales.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};
use svcnet_netns::link;

use crate::components::{self, Started};
use crate::kube::{self, Api};
use crate::state::{self, NODE_TAG, Node, State, VPC_IP, VPC_IP6, ZONE};
use crate::{api_time, gce, kubelet, manifest, mounts, netns, procs};

/// Creates node `index` (1-based) and links it to the VPC router over `n<index>`.
pub fn create(st: &State, index: u32) -> Result<Node> {
    let node = Node {
        name: format!("node-{index}"),
        ns: format!("{}-node-{index}", st.prefix),
        ip: format!("10.128.0.{}", index + 1),
        index,
        pod_cidr: String::new(),
        ip6: state::node_ip6(index),
        pod_cidr6: String::new(),
    };
    netns::add(&node.ns)?;
    let vpc_if = format!("n{index}");
    netns::instance_link(&st.vpc(), &vpc_if, VPC_IP, &node.ns, &node.ip)?;
    netns::instance_link6(&st.vpc(), &vpc_if, VPC_IP6, &node.ns, &node.ip6)?;
    // Its address comes with the podCIDR, once the Node is registered.
    link::bridge(&node.ns, "cbr0")?;
    Ok(node)
}

/// Registers the node as GKE would have it: a GCE instance (tag, internal and NAT IPs) and, as kubelet
/// with `--cloud-provider=external` does, a Node tainted until the cloud controller initialises it and
/// reporting Ready; then waits for the podCIDR kube-controller-manager's node IPAM allocates and gives
/// the node's bridge its first address. Returns the node with its podCIDR.
pub fn register(st: &State, node: &Node) -> Result<Node> {
    gce::call(
        st,
        "POST",
        "/_fake/instances",
        Some(&json!({
            "name": node.name, "zone": ZONE, "networkIP": node.ip,
            "natIP": format!("198.51.100.{}", node.index + 1),
            "tags": [NODE_TAG], "machineType": "e2-medium", "status": "RUNNING"
        })),
    )?;
    kube::api(
        st,
        "POST",
        "/api/v1/nodes",
        Some(&json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node.name, "labels": {
                "kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux"
            }},
            "spec": {
                "taints": [{"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}]
            }
        })),
    )?;
    let now = api_time::rfc3339(std::time::SystemTime::now());
    Api::outside(st).call_as(
        "PATCH",
        &format!("/api/v1/nodes/{}/status", node.name),
        kube::STRATEGIC,
        Some(&json!({"status": {
            "addresses": [
                {"type": "InternalIP", "address": node.ip}, {"type": "InternalIP", "address": node.ip6},
                {"type": "Hostname", "address": node.name}
            ],
            "conditions": [kubelet::ready_condition(&now, &now)]
        }})),
    )?;
    let (cidr, cidr6) = wait_pod_cidrs(st, &node.name)?;
    let node = Node {
        pod_cidr: cidr.clone(),
        pod_cidr6: cidr6.clone(),
        ..node.clone()
    };
    let (Some(gw), Some(prefix)) = (node.bridge_ip(), cidr.split('/').nth(1)) else {
        bail!("node {}: podCIDR {cidr} is not an IPv4 CIDR", node.name);
    };
    link::addr(&node.ns, "cbr0", &format!("{gw}/{prefix}"))?;
    let (Some(gw6), Some(prefix6)) = (node.bridge_ip6(), cidr6.split('/').nth(1)) else {
        bail!("node {}: podCIDR {cidr6} is not an IPv6 CIDR", node.name);
    };
    link::addr(&node.ns, "cbr0", &format!("{gw6}/{prefix6}"))?;
    Ok(node)
}

/// The Node's podCIDRs once node IPAM allocated them: (IPv4, IPv6), from `spec.podCIDRs` (the
/// cluster is dual-stack, so node IPAM gives one of each).
fn wait_pod_cidrs(st: &State, name: &str) -> Result<(String, String)> {
    let start = Instant::now();
    loop {
        let n = kube::api(st, "GET", &format!("/api/v1/nodes/{name}"), None)?;
        let cidrs: Vec<&str> = n["spec"]["podCIDRs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let v4 = cidrs.iter().find(|c| !c.contains(':'));
        let v6 = cidrs.iter().find(|c| c.contains(':'));
        if let (Some(v4), Some(v6)) = (v4, v6) {
            return Ok(((*v4).to_owned(), (*v6).to_owned()));
        }
        if start.elapsed() > Duration::from_secs(30) {
            bail!("node {name} got no IPv4 and IPv6 podCIDRs from node IPAM in 30 s (has {cidrs:?})");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Starts svcnet-proxy in the node namespace with the lab overlay DaemonSet's command line, plus
/// `--node-ip` with the node's IPv6 address: svcnet-proxy syncs IPv6 only on a node with an IPv6
/// address, and the Node object loses its IPv6 InternalIP once the cloud controller sets the
/// addresses from the GCE instance (IPv4 only), so a proxy (re)started after that would drop the
/// IPv6 Services the lab carries.
pub fn start_proxy(dir: &Path, st: &mut State, docs: &[Value], node: &Node) -> Result<Started> {
    let fields = BTreeMap::from([
        ("spec.nodeName", node.name.clone()),
        ("metadata.name", format!("svcnet-proxy-{}", node.name)),
    ]);
    let l = manifest::launch(docs, manifest::PROXY, &dir.join("config"), &fields)?;
    mounts::write_files(&mounts::with_identity(l.files, &st.proxy_kubeconfig)?)?;
    let bin = procs::sibling(&l.bin)?;
    let mut args = l.args;
    if !node.ip6.is_empty() {
        args.push(format!("--node-ip={}", node.ip6));
    }
    components::launch(dir, st, &format!("proxy-{}", node.name), &node.ns, bin, args)
}

/// Waits until the cloud controller removed every node's uninitialized taint and created its route.
pub fn wait_initialised(st: &State) -> Result<()> {
    let start = Instant::now();
    loop {
        let nodes = kube::api(st, "GET", "/api/v1/nodes", None)?;
        let tainted = nodes["items"].as_array().into_iter().flatten().any(|n| {
            n["spec"]["taints"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| t["key"] == "node.cloudprovider.kubernetes.io/uninitialized")
        });
        let gce_state = gce::call(st, "GET", "/_fake/state", None)?;
        let routed: Vec<&str> = gce_state["routes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["destRange"].as_str())
            .collect();
        let unrouted: Vec<String> = st
            .nodes
            .iter()
            .map(|n| n.pod_cidr.clone())
            .filter(|c| !routed.contains(&c.as_str()))
            .collect();
        if !tainted && unrouted.is_empty() {
            return Ok(());
        }
        if start.elapsed() > Duration::from_secs(60) {
            bail!(
                "nodes not initialised / routes missing after 60s (tainted={tainted}, unrouted={unrouted:?})"
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
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
    let node = register(&st, &node)?;
    if let Some(n) = st.nodes.iter_mut().find(|n| n.name == node.name) {
        *n = node.clone();
    }
    state::save(dir, &st)?;
    let proxy = start_proxy(dir, &mut st, &docs, &node)?;
    proxy.wait(dir, Duration::from_secs(60))?;
    wait_initialised(&st)?;
    println!("node/{} added ({})", node.name, node.ip);
    Ok(())
}

/// `svcnet-lab remove-node NAME`: like a node-pool scale-down: its Pods are deleted (their controllers
/// make new ones on the other nodes; the agent removes their namespaces), the Node object and the
/// instance are deleted, then its proxy and namespace.
pub fn remove(dir: &Path, name: &str) -> Result<()> {
    let mut st = state::load(dir)?;
    let Some(node) = st.nodes.iter().find(|n| n.name == name).cloned() else {
        bail!("no node {name}");
    };
    let pods = kube::api(
        &st,
        "GET",
        &format!("/api/v1/pods?fieldSelector=spec.nodeName%3D{name}"),
        None,
    )?;
    for p in pods["items"].as_array().into_iter().flatten() {
        let (Some(ns), Some(pod)) = (
            p["metadata"]["namespace"].as_str(),
            p["metadata"]["name"].as_str(),
        ) else {
            continue;
        };
        kube::api(
            &st,
            "DELETE",
            &format!("/api/v1/namespaces/{ns}/pods/{pod}"),
            Some(&json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})),
        )?;
        println!("pod/{pod} deleted");
    }
    st.nodes.retain(|n| n.name != name);
    state::save(dir, &st)?;
    kube::api(&st, "DELETE", &format!("/api/v1/nodes/{name}"), None)?;
    gce::call(&st, "DELETE", &format!("/_fake/instances/{ZONE}/{name}"), None)?;
    if let Some(p) = st.procs.remove(&format!("proxy-{name}")) {
        procs::kill(p.pid);
    }
    netns::del(&node.ns);
    let _ = link::ip(&st.vpc(), &["link", "del", &format!("n{}", node.index)]);
    state::save(dir, &st)?;
    println!("node/{name} removed");
    Ok(())
}
