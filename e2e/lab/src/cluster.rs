//! `up` and `down`: namespaces; the real control plane (etcd, kube-apiserver, kube-controller-manager
//! from `svcnet-testcluster`'s plan) with `kubectl proxy`, svcnet-fake-gce and svcnet-cloud-controller,
//! all in the `vpc` namespace on 10.128.0.1 (reachable from the nodes); GCE instances and Nodes; a
//! proxy per node; and the VPC agent (which also plays the kubelets and the scheduler).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use svcnet_testcluster::{Component, Options, Plan};

use crate::components::Started;
use crate::kube;
use crate::state::{self, *};
use crate::{components, manifest, mounts, netns, nodes, pod_record, pods, procs, vpc};

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
    let t0 = Instant::now();
    // Read first: a broken overlay fails before anything is made.
    let docs = manifest::render(&st.overlay)?;
    vpc::create(st)?;
    for i in 1..=n {
        let node = nodes::create(st, i)?;
        st.nodes.push(node);
        state::save(dir, st)?;
    }
    let vpc_ns = st.vpc();
    start_control_plane(dir, st)?;
    let t_cp = t0.elapsed();

    start_fake_gce(dir, st)?;
    apply_crds(dir, st, &docs)?;
    let mut registered = Vec::new();
    for node in &st.nodes {
        registered.push(nodes::register(st, node)?);
    }
    st.nodes = registered;
    state::save(dir, st)?;

    // The agent plays the kubelets (Leases, Pods) and runs the VPC.
    let me = std::env::current_exe()?;
    let agent_args = strings(&["agent", "--dir", &dir.display().to_string()]);
    components::launch(dir, st, "vpc-agent", &vpc_ns, me, agent_args)?;

    let cc = start_cloud_controller(dir, st, &docs)?;

    let nodes = st.nodes.clone();
    let mut proxies = Vec::new();
    for node in &nodes {
        proxies.push(nodes::start_proxy(dir, st, &docs, node)?);
    }
    for p in proxies {
        p.wait(dir, Duration::from_secs(60))?;
    }
    cc.wait(dir, Duration::from_secs(60))?;
    nodes::wait_initialised(st)?;
    println!(
        "lab {} is up: {} node(s), control plane {:.1} s, all {:.1} s; state in {}",
        st.prefix,
        n,
        t_cp.as_secs_f64(),
        t0.elapsed().as_secs_f64(),
        dir.display()
    );
    Ok(())
}

/// svcnet-fake-gce in the `vpc` namespace as the lab's project, region and zone; returns once it listens.
fn start_fake_gce(dir: &Path, st: &mut State) -> Result<()> {
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
    components::launch(dir, st, "fake-gce", &st.vpc(), bin, gce_args)?.wait(dir, Duration::from_secs(20))?;
    Ok(())
}

/// The CRDs as the overlay renders them (what `kubectl apply -k` would create), applied and established.
fn apply_crds(dir: &Path, st: &State, docs: &[Value]) -> Result<()> {
    let crds: Vec<&Value> = docs
        .iter()
        .filter(|d| d["kind"] == "CustomResourceDefinition")
        .collect();
    if !crds.is_empty() {
        let file = dir.join("crds.json");
        std::fs::write(
            &file,
            serde_json::to_vec(&serde_json::json!({"apiVersion": "v1", "kind": "List", "items": crds}))?,
        )?;
        let file = file.display().to_string();
        kube::kubectl_ok(dir, st, &["apply", "--server-side", "-f", &file])?;
        kube::kubectl_ok(
            dir,
            st,
            &[
                "wait",
                "--for=condition=Established",
                "crd",
                "--all",
                "--timeout=60s",
            ],
        )?;
    }
    Ok(())
}

/// The controller as the lab overlay's Deployment runs it (one replica: see README.md), under its
/// ServiceAccount; not waited for here, so it starts while the proxies do.
fn start_cloud_controller(dir: &Path, st: &mut State, docs: &[Value]) -> Result<Started> {
    let fields = BTreeMap::from([("metadata.name", "svcnet-cloud-controller-lab".to_owned())]);
    let cc = manifest::launch(docs, manifest::CONTROLLER, &dir.join("config"), &fields)?;
    mounts::write_files(&mounts::with_identity(cc.files, &st.controller_kubeconfig)?)?;
    let bin = procs::sibling(&cc.bin)?;
    components::launch(dir, st, "cloud-controller", &st.vpc(), bin, cc.args)
}

/// etcd, kube-apiserver and kube-controller-manager as `svcnet-testcluster` plans them (TLS, RBAC, node
/// IPAM on [`CLUSTER_CIDR`] and [`CLUSTER_CIDR6`], dual-stack Service ranges) but started as lab
/// components, so they outlive `up` and `stop`/`start` work on them; then the components' ServiceAccounts with their manifests' RBAC, and `kubectl proxy`.
fn start_control_plane(dir: &Path, st: &mut State) -> Result<()> {
    let vpc_ns = st.vpc();
    let bins = svcnet_testcluster::binaries()?;
    let kdir = dir.join("k8s");
    std::fs::create_dir_all(&kdir)?;
    let ip: IpAddr = VPC_IP.parse()?;
    let plan = Plan::prepare(
        &bins,
        &kdir,
        ip,
        Options {
            netns: Some(vpc_ns.clone()),
            ip: Some(ip),
            cluster_cidr: format!("{CLUSTER_CIDR},{CLUSTER_CIDR6}"),
            service_cidr: SERVICE_CIDRS.into(),
            // The agent plays the kubelets: their Leases and Ready conditions are judged as in a cluster.
            node_lifecycle: true,
            ..Options::default()
        },
    )?;
    st.admin_kubeconfig = plan.admin_kubeconfig.clone();
    std::fs::copy(&plan.admin_kubeconfig, dir.join("kubeconfig"))?;
    state::save(dir, st)?;
    let (etcd, apiserver) = (plan.etcd.clone(), plan.apiserver.clone());
    components::launch(dir, st, "etcd", &vpc_ns, etcd.program, etcd.args)?;
    components::launch(dir, st, "apiserver", &vpc_ns, apiserver.program, apiserver.args)?
        .wait(dir, Duration::from_secs(120))?;
    let Some(kcm) = plan.controller_manager.clone() else {
        bail!("the control plane's plan has no kube-controller-manager");
    };
    let kcm = components::launch(dir, st, "controller-manager", &vpc_ns, kcm.program, kcm.args)?;
    // The serviceaccount controller making `default` shows the controllers run with their credentials;
    // Pods are not admitted in a namespace before it exists.
    let admin = kube::kubectl(dir, st);
    let start = Instant::now();
    while !admin
        .run(&["get", "serviceaccount", "default", "-n", "default"])?
        .status
        .success()
    {
        if !procs::alive(kcm.pid) || start.elapsed() > Duration::from_secs(90) {
            bail!(
                "kube-controller-manager not ready; log:\n{}",
                procs::tail(
                    &std::fs::read_to_string(procs::log_path(dir, "controller-manager")).unwrap_or_default(),
                    30
                )
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    st.proxy_kubeconfig = plan.component_kubeconfig(Component::Proxy)?;
    st.controller_kubeconfig = plan.component_kubeconfig(Component::CloudController)?;
    state::save(dir, st)?;
    let kubectl = svcnet_testcluster::kubectl_program();
    let args = vec![
        "proxy".to_owned(),
        format!("--kubeconfig={}", st.admin_kubeconfig.display()),
        "--address=127.0.0.1".to_owned(),
        format!("--port={}", API_PROXY.rsplit(':').next().unwrap_or("8001")),
    ];
    components::launch(dir, st, "api-proxy", &vpc_ns, kubectl, args)?.wait(dir, Duration::from_secs(20))?;
    Ok(())
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
    stop_pods(dir, &st);
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

/// Stops every pod's hostname server by its recorded pid, and waits for it, before any namespace goes:
/// the pods' namespaces were made in the agent's own mount namespace, so here their names lead to no
/// process and deleting them would leave the servers running (see [`pods::stop`]).
fn stop_pods(dir: &Path, st: &State) {
    // The agent starts pods and records them: once it is gone, the record names every server.
    if let Some(agent) = st.procs.get("vpc-agent") {
        let pid = agent.pid;
        if procs::wait_until(Duration::from_secs(10), || procs::gone(pid) || !procs::ours(pid)).is_err() {
            eprintln!("the vpc agent (pid {pid}) is still running: pods it starts now may be left behind");
        }
    }
    for pod in pod_record::load(dir) {
        if let Err(e) = pods::stop(&pod.netns, pod.server, None) {
            eprintln!("pod {}/{}: {e:#}", pod.namespace, pod.name);
        }
    }
}
