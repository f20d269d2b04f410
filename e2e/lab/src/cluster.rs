//! `up` and `down`: namespaces, the control plane (svcnet-fake-gce, svcnet-apiserver,
//! svcnet-cloud-controller, all in the `vpc` namespace on 10.128.0.1, reachable from the nodes), instances
//! and tainted Nodes, a proxy per node, and the VPC agent.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::state::{self, *};
use crate::{components, http, manifest, netns, nodes, procs, vpc};

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

pub fn up(dir: &Path, n: u32, overlay: &Path) -> Result<()> {
    if state::path(dir).exists() {
        bail!(
            "{} exists: a lab is up (run `svcnet-lab down` first)",
            state::path(dir).display()
        );
    }
    std::fs::create_dir_all(dir)?;
    let mut st = State {
        prefix: new_prefix(),
        overlay: overlay.to_path_buf(),
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

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn build(dir: &Path, st: &mut State, n: u32) -> Result<()> {
    // Read first: a broken overlay fails before anything is made.
    let docs = manifest::render(&st.overlay)?;
    vpc::create(st)?;
    for i in 1..=n {
        let node = nodes::create(st, i)?;
        st.nodes.push(node);
        state::save(dir, st)?;
    }
    let vpc_ns = st.vpc();
    let gce_args = strings(&[
        "--listen",
        &format!("{VPC_IP}:{GCE_PORT}"),
        "--project",
        PROJECT,
        "--region",
        REGION,
        "--zones",
        ZONE,
        "--external-range",
        EXTERNAL_RANGE,
        "--op-latency-ms",
        "100",
    ]);
    let bin = procs::sibling("svcnet-fake-gce")?;
    components::launch(dir, st, "fake-gce", &vpc_ns, bin, gce_args)?.wait(dir, Duration::from_secs(20))?;

    // The state file lets the stand-in restart with its objects (the apiserver-restart scenario).
    let api_args = strings(&[
        "--listen",
        &format!("{VPC_IP}:{API_PORT}"),
        "--kubeconfig-out",
        &dir.join("kubeconfig").display().to_string(),
        "--state-file",
        &dir.join("apiserver-state.json").display().to_string(),
        "--bookmark-interval-ms",
        "2000",
    ]);
    let bin = procs::sibling("svcnet-apiserver")?;
    components::launch(dir, st, "apiserver", &vpc_ns, bin, api_args)?.wait(dir, Duration::from_secs(20))?;

    // The CRDs as the overlay renders them (what `kubectl apply -k` would create).
    for crd in docs.iter().filter(|d| d["kind"] == "CustomResourceDefinition") {
        api(
            st,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Some(crd),
        )?;
    }
    for node in &st.nodes {
        nodes::register(st, node)?;
    }

    // The controller as the lab overlay's Deployment runs it (one replica: see README.md).
    let fields = BTreeMap::from([("metadata.name", "svcnet-cloud-controller-lab".to_owned())]);
    let cc = manifest::launch(&docs, manifest::CONTROLLER, &dir.join("config"), &fields)?;
    write_files(&cc.files)?;
    let bin = procs::sibling(&cc.bin)?;
    let cc = components::launch(dir, st, "cloud-controller", &vpc_ns, bin, cc.args)?;

    let me = std::env::current_exe()?;
    let agent_args = strings(&["agent", "--dir", &dir.display().to_string()]);
    components::launch(dir, st, "vpc-agent", &vpc_ns, me, agent_args)?;

    let nodes = st.nodes.clone();
    let mut proxies = Vec::new();
    for node in &nodes {
        proxies.push(nodes::start_proxy(dir, st, &docs, node)?);
    }
    for p in proxies {
        p.wait(dir, Duration::from_secs(60))?;
    }
    cc.wait(dir, Duration::from_secs(60))?;
    wait_initialised(st)?;
    println!(
        "lab {} is up: {} node(s); state in {}",
        st.prefix,
        n,
        dir.display()
    );
    Ok(())
}

/// Writes the ConfigMap files a launch reads.
pub fn write_files(files: &[(std::path::PathBuf, String)]) -> Result<()> {
    for (path, content) in files {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, content).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

/// Waits until the cloud controller removed every node's uninitialized taint and created its route.
pub fn wait_initialised(st: &State) -> Result<()> {
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
        let gce_state = gce(st, "GET", "/_fake/state", None)?;
        let routed: Vec<&str> = gce_state["routes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["destRange"].as_str())
            .collect();
        let unrouted: Vec<String> = st
            .nodes
            .iter()
            .map(Node::pod_cidr)
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

/// Removes every process, namespace and file of the lab in `dir` (works after a crash: the state file is
/// written before anything is created, and namespaces are found by prefix).
pub fn down(dir: &Path) -> Result<()> {
    // The demo's signal handler and the main thread's own cleanup may both get here: one at a time, and
    // the second finds nothing left to do.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
