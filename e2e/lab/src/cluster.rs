//! `up` and `down`: namespaces, the control plane (svcnet-fake-gce, svcnet-apiserver,
//! svcnet-cloud-controller, all in the `vpc` namespace on 10.128.0.1, reachable from the nodes), instances
//! and tainted Nodes, a proxy per node, and the VPC agent.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::state::{self, *};
use crate::{http, netns, nodes, procs, vpc};

const CRD_YAML: &str = include_str!("../../../manifests/crds/cloudloadbalancers.svcnet.dev.yaml");

pub fn api_url(path: &str) -> String {
    format!("http://{VPC_IP}:{API_PORT}{path}")
}

pub fn gce_url(path: &str) -> String {
    format!("http://{VPC_IP}:{GCE_PORT}{path}")
}

/// A JSON call to the API stand-in (made from the `vpc` namespace).
pub fn api(st: &State, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
    let ct = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    http::json_in(&st.vpc(), method, &api_url(path), ct, body)
}

/// A JSON call to the fake GCE (made from the `vpc` namespace).
pub fn gce(st: &State, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
    http::json_in(&st.vpc(), method, &gce_url(path), "application/json", body)
}

pub fn up(dir: &Path, n: u32) -> Result<()> {
    if state::path(dir).exists() {
        bail!(
            "{} exists: a lab is up (run `svcnet-lab down` first)",
            state::path(dir).display()
        );
    }
    std::fs::create_dir_all(dir)?;
    let mut st = State {
        prefix: new_prefix(),
        ..State::default()
    };
    // Saved before anything exists, so `down` can always clean up.
    state::save(dir, &st)?;
    let res = build(dir, &mut st, n);
    if let Err(e) = res {
        eprintln!("svcnet-lab up failed: {e:#}\ncleaning up");
        down(dir)?;
        return Err(e);
    }
    Ok(())
}

fn build(dir: &Path, st: &mut State, n: u32) -> Result<()> {
    vpc::create(st)?;
    for i in 1..=n {
        let node = nodes::create(st, i)?;
        st.nodes.push(node);
        state::save(dir, st)?;
    }
    let vpc_ns = st.vpc();
    let zones = ZONE.to_string();
    let gce_args: Vec<String> = [
        "--listen",
        &format!("{VPC_IP}:{GCE_PORT}"),
        "--project",
        PROJECT,
        "--region",
        REGION,
        "--zones",
        &zones,
        "--external-range",
        EXTERNAL_RANGE,
        "--op-latency-ms",
        "100",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let pid = procs::spawn(
        dir,
        &vpc_ns,
        "fake-gce",
        &procs::sibling("svcnet-fake-gce")?,
        &gce_args,
    )?;
    st.pids.push(pid);
    state::save(dir, st)?;
    procs::wait_log(dir, "fake-gce", pid, "listening on", Duration::from_secs(20))?;

    let api_args: Vec<String> = vec![
        "--listen".into(),
        format!("{VPC_IP}:{API_PORT}"),
        "--kubeconfig-out".into(),
        dir.join("kubeconfig").display().to_string(),
        "--bookmark-interval-ms".into(),
        "2000".into(),
    ];
    let pid = procs::spawn(
        dir,
        &vpc_ns,
        "apiserver",
        &procs::sibling("svcnet-apiserver")?,
        &api_args,
    )?;
    st.pids.push(pid);
    state::save(dir, st)?;
    procs::wait_log(dir, "apiserver", pid, "listening on", Duration::from_secs(20))?;

    let crd: Value = serde_yaml::from_str(CRD_YAML).context("CRD yaml")?;
    api(
        st,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some(&crd),
    )?;

    for node in &st.nodes {
        gce(
            st,
            "POST",
            "/_fake/instances",
            Some(&json!({
                "name": node.name, "zone": ZONE, "networkIP": node.ip,
                "natIP": format!("198.51.100.{}", node.index + 1),
                "tags": [NODE_TAG], "machineType": "e2-medium", "status": "RUNNING"
            })),
        )?;
        // As kubelet with --cloud-provider=external registers it: tainted until the cloud controller
        // initialises it; the pod CIDR is what the node IPAM controller would assign.
        api(
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
    }

    let cc_args: Vec<String> = [
        "--kubeconfig",
        &dir.join("kubeconfig").display().to_string(),
        "--project",
        PROJECT,
        "--region",
        REGION,
        "--zones",
        &zones,
        "--network",
        NETWORK,
        "--cluster-name",
        CLUSTER,
        "--node-tags",
        NODE_TAG,
        "--gce-endpoint",
        &gce_url(""),
        "--cluster-cidr",
        CLUSTER_CIDR,
        "--gce-poll-ms",
        "50",
        "--route-resync-seconds",
        "10",
        "--node-monitor-seconds",
        "5",
        "--metrics-addr",
        "127.0.0.1:10258",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let pid = procs::spawn(
        dir,
        &vpc_ns,
        "cloud-controller",
        &procs::sibling("svcnet-cloud-controller")?,
        &cc_args,
    )?;
    st.pids.push(pid);

    let me = std::env::current_exe()?;
    let agent_args = vec!["agent".to_string(), "--dir".into(), dir.display().to_string()];
    let pid = procs::spawn(dir, &vpc_ns, "vpc-agent", &me, &agent_args)?;
    st.pids.push(pid);

    let nodes = st.nodes.clone();
    for node in &nodes {
        let pid = nodes::start_proxy(dir, node)?;
        st.pids.push(pid);
    }
    state::save(dir, st)?;
    for (node, pid) in nodes.iter().zip(st.pids.iter().rev().take(nodes.len()).rev()) {
        procs::wait_log(
            dir,
            &format!("proxy-{}", node.name),
            *pid,
            "synced",
            Duration::from_secs(60),
        )?;
    }
    wait_initialised(st)?;
    println!(
        "lab {} is up: {} node(s); state in {}",
        st.prefix,
        n,
        dir.display()
    );
    Ok(())
}

/// Waits until the cloud controller removed every node's uninitialized taint and created its route.
fn wait_initialised(st: &State) -> Result<()> {
    let start = Instant::now();
    loop {
        let nodes = api(st, "GET", "/api/v1/nodes", None)?;
        let tainted = nodes["items"].as_array().into_iter().flatten().any(|n| {
            n["spec"]["taints"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| t["key"] == "node.cloudprovider.kubernetes.io/uninitialized")
        });
        let routes = gce(st, "GET", "/_fake/state", None)?["routes"]
            .as_array()
            .map_or(0, Vec::len);
        if !tainted && routes >= st.nodes.len() {
            return Ok(());
        }
        if start.elapsed() > Duration::from_secs(60) {
            bail!("nodes not initialised / routes missing after 60s (tainted={tainted}, routes={routes})");
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Removes every process, namespace and file of the lab in `dir` (works after a crash: the state file is
/// written before anything is created, and namespaces are found by prefix).
pub fn down(dir: &Path) -> Result<()> {
    let st = match state::load(dir) {
        Ok(st) => st,
        Err(e) if !state::path(dir).exists() => {
            println!("nothing to tear down ({e})");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    for pid in &st.pids {
        procs::kill(*pid);
    }
    if !st.prefix.is_empty() {
        // Pods and nodes first, the VPC last (it holds the control plane).
        let mut all = netns::list(&st.prefix);
        all.sort_by_key(|n| n.ends_with("-vpc"));
        for ns in all {
            netns::del(&ns);
        }
    }
    std::fs::remove_dir_all(dir).with_context(|| format!("remove {}", dir.display()))?;
    println!("lab {} is down", st.prefix);
    Ok(())
}
