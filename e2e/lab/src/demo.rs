//! `make demo`: the GKE Service walkthrough (shared/reference/gke-service-walkthrough.md) replayed on the
//! lab, step by step with the article's own commands: kubectl (the pinned v1.34 build, as cluster-admin,
//! against the real kube-apiserver) and gcloud (pointed at the fake GCE), run in the `vpc` namespace. On failure it prints the node's iptables-save, the fake's state and the control-plane
//! logs; the lab is always torn down unless `--keep`, also when the demo is interrupted (Ctrl-C, SIGTERM,
//! SIGHUP), so running it without `make` leaves nothing behind either.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::state::{self, CLIENT_IP, CLUSTER_CIDR, NODE_TAG, State};
use crate::{cluster, kube, netns};

mod tools;

use tools::{Tools, explain, fetch, node_rules, step, wait, wait_endpoints, wait_pods_running};

/// The walkthrough's image; the lab's agent runs its hostname server for it (`crate::kubelet`).
pub const IMAGE: &str = "gcr.io/google_containers/serve_hostname";

/// KUBE-SVC- + base32(sha256("default/hostnames" + "tcp")): today's kube-proxy name for the unnamed port.
const SVC_CHAIN: &str = "KUBE-SVC-YN5D6RYVEVZOH44Q";
/// The same chain as the 2017 walkthrough prints it: Kubernetes 1.5 named an unnamed port
/// `default/hostnames:` (with the colon), so it hashed to another name.
const WALKTHROUGH_SVC_CHAIN: &str = "KUBE-SVC-NWV5X2332I4OT4T3";

/// Set once a signal arrived: the handler thread owns the teardown from then on.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub fn run(dir: &Path, nodes: u32, keep: bool, overlay: &Path) -> Result<()> {
    teardown_on_signal(dir.to_path_buf())?;
    let res = cluster::up(dir, nodes, overlay).and_then(|()| walkthrough(dir));
    if INTERRUPTED.load(Ordering::SeqCst) {
        // The signal also killed the command under way, hence this error: no diagnostics, and the
        // handler ends the process once the lab is down.
        loop {
            std::thread::park();
        }
    }
    if let Err(e) = &res {
        eprintln!("\ndemo failed: {e:#}");
        if let Ok(st) = state::load(dir) {
            crate::diagnose::print(dir, &st);
        }
    }
    if keep && res.is_ok() {
        println!(
            "\nThe lab stays up (--keep). Tear it down with: svcnet-lab --dir {} down",
            dir.display()
        );
    } else {
        cluster::down(dir)?;
    }
    res
}

/// On SIGINT, SIGTERM or SIGHUP: stop creating namespaces, tear the lab down, exit 128+signal. (A signal
/// also reaches the `ip`/kubectl/gcloud child under way, so the main thread fails at the same time; it
/// leaves the cleanup to this thread, see [`run`].) The lab's own processes run in their own process
/// groups and are killed by `down`.
fn teardown_on_signal(dir: PathBuf) -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("signal runtime")?;
    // Registered before anything is created, so no signal finds the default action (exit, no cleanup).
    let (mut int, mut term, mut hup) = {
        let _in_rt = rt.enter();
        (
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
        )
    };
    std::thread::spawn(move || {
        let (name, code) = rt.block_on(async {
            tokio::select! {
                _ = int.recv() => ("SIGINT", 130),
                _ = term.recv() => ("SIGTERM", 143),
                _ = hup.recv() => ("SIGHUP", 129),
            }
        });
        INTERRUPTED.store(true, Ordering::SeqCst);
        eprintln!("\n{name}: tearing the lab down");
        netns::stop_creating();
        if let Err(e) = cluster::down(&dir) {
            eprintln!("teardown failed: {e:#}");
        }
        std::process::exit(code);
    });
    Ok(())
}

/// The walkthrough's sections in the article's order: each starts from what the one before left behind.
fn walkthrough(dir: &Path) -> Result<()> {
    let st = state::load(dir)?;
    let t = Tools::new(dir, &st)?;
    the_cluster(&t)?;
    deploy(&t, &st)?;
    cluster_ip(dir, &t, &st)?;
    scale_to_two(&t, &st)?;
    node_port(&t, &st)?;
    let lb_ip = load_balancer(&t, &st)?;
    through_the_lb(&st, &lb_ip)?;
    what_gce_got(dir, &t, &st)?;
    explore(dir, &t, &st);
    Ok(())
}

fn the_cluster(t: &Tools) -> Result<()> {
    step("The cluster: a real Kubernetes control plane, nodes whose pod CIDRs come from its node IPAM");
    t.kubectl(&["version"])?;
    t.gcloud(&["compute", "instances", "list"])?;
    t.kubectl(&[
        "get",
        "node",
        "-o",
        "custom-columns=NAME:.metadata.name,EXTERNAL-IP:.status.addresses[?(@.type==\"ExternalIP\")].address,INTERNAL-IP:.status.addresses[?(@.type==\"InternalIP\")].address,POD-CIDR:.spec.podCIDR",
    ])?;
    t.gcloud(&["compute", "routes", "list"])?;
    Ok(())
}

fn deploy(t: &Tools, st: &State) -> Result<()> {
    step("Deploy hostnames (1 replica, port 9376): no Service yet");
    println!(
        "# The article's `kubectl run hostnames --image=... --replicas=1` made a Deployment; since\n\
         # Kubernetes 1.18 `kubectl run` makes a bare Pod, so today's command is `kubectl create deployment`\n\
         # (it labels the pods app=hostnames too). The lab's nodes run the hostname server for this image."
    );
    t.kubectl(&[
        "create",
        "deployment",
        "hostnames",
        &format!("--image={IMAGE}"),
        "--port=9376",
    ])?;
    wait_pods_running(st, 1)?;
    t.kubectl(&["get", "deployment,replicaset", "-l", "app=hostnames"])?;
    t.kubectl(&["get", "pod", "-o", "wide", "-l", "app=hostnames"])?;
    Ok(())
}

fn cluster_ip(dir: &Path, t: &Tools, st: &State) -> Result<()> {
    step("ClusterIP Service: kube-proxy's KUBE-SVC / KUBE-SEP chains on the node");
    t.expose(None)?;
    wait(
        "the endpoint in the node's rules",
        Duration::from_secs(30),
        || {
            let st = state::load(dir)?;
            let out = netns::exec(&st.nodes[0].ns, &["iptables-save", "-t", "nat"])?;
            Ok(out.contains("KUBE-SEP") && out.contains("default/hostnames"))
        },
    )?;
    wait_endpoints(st, 1)?;
    t.listing()?;
    println!("# kube-proxy reads the same endpoints from the EndpointSlice:");
    t.kubectl(&["get", "endpointslices", "-l", "app=hostnames"])?;
    let rules = node_rules(st, 0, "default/hostnames")?;
    if !rules.contains(SVC_CHAIN) {
        bail!("no {SVC_CHAIN} in the node's rules");
    }
    println!(
        "# {SVC_CHAIN}: sha256(\"default/hostnames\" + \"tcp\"), as kube-proxy v1.34 names it.\n\
         # `kubectl expose` leaves the port unnamed. The 2017 article shows {WALKTHROUGH_SVC_CHAIN}\n\
         # because Kubernetes 1.5 printed an unnamed port as \"default/hostnames:\" (with a colon)."
    );
    Ok(())
}

fn scale_to_two(t: &Tools, st: &State) -> Result<()> {
    step("Scale to 2: the first endpoint is chosen with probability 0.5");
    t.kubectl(&["scale", "deployment", "hostnames", "--replicas", "2"])?;
    wait(
        "probability 0.5 in the node's rules",
        Duration::from_secs(30),
        || {
            let out = netns::exec(&st.nodes[0].ns, &["iptables-save", "-t", "nat"])?;
            Ok(out.contains("--probability 0.5"))
        },
    )?;
    wait_pods_running(st, 2)?;
    wait_endpoints(st, 2)?;
    t.listing()?;
    node_rules(st, 0, "default/hostnames")?;
    Ok(())
}

fn node_port(t: &Tools, st: &State) -> Result<()> {
    step("NodePort: reachable from outside only once a GCE firewall rule allows it");
    t.kubectl(&["delete", "service", "hostnames"])?;
    t.expose(Some("NodePort"))?;
    t.listing()?;
    let port = t.kubectl(&[
        "get",
        "svc",
        "hostnames",
        "-o",
        "jsonpath={.spec.ports[0].nodePort}",
    ])?;
    println!();
    let node_url = format!("http://{}:{}/", st.nodes[0].ip, port.trim());
    println!("# from the client ({CLIENT_IP}): GET {node_url}");
    match fetch(st, &node_url) {
        Ok(name) => bail!("NodePort answered ({name}) without a firewall rule"),
        Err(_) => println!("no answer: the VPC firewall drops it, as GCE denies ingress by default"),
    }
    t.gcloud(&[
        "compute",
        "firewall-rules",
        "create",
        "allow-hostnames-nodeport",
        "--network",
        "default",
        "--allow",
        &format!("tcp:{}", port.trim()),
        "--target-tags",
        NODE_TAG,
    ])?;
    let mut answer = String::new();
    wait(
        "the NodePort through the firewall",
        Duration::from_secs(20),
        || {
            answer = fetch(st, &node_url)?;
            Ok(true)
        },
    )?;
    println!("# from the client: GET {node_url} -> {answer}");
    Ok(())
}

/// Returns the load balancer's IP once the Service shows it.
fn load_balancer(t: &Tools, st: &State) -> Result<String> {
    step("LoadBalancer: the cloud controller builds the GCE network load balancer");
    t.kubectl(&["delete", "service", "hostnames"])?;
    t.expose(Some("LoadBalancer"))?;
    let mut lb_ip = String::new();
    wait("the Service's EXTERNAL-IP", Duration::from_secs(60), || {
        let v = kube::api(st, "GET", "/api/v1/namespaces/default/services/hostnames", None)?;
        lb_ip = v["status"]["loadBalancer"]["ingress"][0]["ip"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Ok(!lb_ip.is_empty())
    })?;
    t.listing()?;
    t.gcloud(&["compute", "firewall-rules", "list"])?;
    t.gcloud(&["compute", "forwarding-rules", "list"])?;
    t.gcloud(&["compute", "target-pools", "list"])?;
    t.gcloud(&["compute", "routes", "list"])?;
    node_rules(st, 0, &lb_ip)?;
    Ok(lb_ip)
}

fn through_the_lb(st: &State, lb_ip: &str) -> Result<()> {
    step("From the client, through the LB IP (routed by the VPC to a healthy node, no NAT), to a pod");
    let url = format!("http://{lb_ip}/");
    wait("the LB IP to answer", Duration::from_secs(30), || {
        Ok(fetch(st, &url).is_ok())
    })?;
    for _ in 0..4 {
        println!("# from the client: GET {url} -> {}", fetch(st, &url)?);
    }
    Ok(())
}

fn what_gce_got(dir: &Path, t: &Tools, st: &State) -> Result<()> {
    step("What GCE got, and why a packet reaches a pod, without reading iptables-save by hand");
    t.kubectl(&["get", "cloudloadbalancers"])?;
    explain(dir, t, &st.nodes[0].name)
}

/// The commands to look around a kept lab, with this lab's names filled in.
fn explore(dir: &Path, t: &Tools, st: &State) {
    let node = &st.nodes[0];
    step("Explore");
    println!(
        "While the lab is up (svcnet-lab demo --keep, or svcnet-lab up):\n\
         \x20 ip netns exec {vpc} {kubectl} --kubeconfig {kc} get svc,endpointslices,nodes -o yaml > /tmp/objs.yaml\n\
         \x20 svcnet-proxy explain -f /tmp/objs.yaml --service default/hostnames --cluster-cidr {CLUSTER_CIDR} --node-name {nname}\n\
         \x20 ip netns exec {nns} iptables-save -t nat        # the rules on {nname}\n\
         \x20 ip -n {vpc} route                               # GCE routes and LB IPs in the VPC router\n\
         \x20 svcnet-lab --dir {dir} down                      # tear everything down",
        vpc = st.vpc(),
        kubectl = svcnet_testcluster::kubectl_program().display(),
        kc = t.kubeconfig,
        nns = node.ns,
        nname = node.name,
        dir = dir.display(),
    );
}
