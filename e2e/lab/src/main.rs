//! svcnet-lab: a GKE-like cluster made of network namespaces on one machine (see README.md).
#![forbid(unsafe_code)]

mod api_time;
mod cluster;
mod components;
mod demo;
mod diagnose;
mod firewall;
mod gce;
mod gce_network;
mod gcloud;
mod http;
mod kube;
mod kube_proxy;
mod kubelet;
mod lb_health;
mod lb_targets;
mod load;
mod manifest;
mod mounts;
mod netns;
mod nodes;
mod pod_record;
mod pods;
mod procs;
mod state;
mod udp;
mod vpc;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "svcnet-lab",
    about = "A GKE-like cluster in network namespaces (needs root)"
)]
struct Cli {
    /// Where the lab keeps its state file, kubeconfig and logs.
    #[arg(
        long,
        global = true,
        env = "SVCNET_LAB_DIR",
        default_value = "/tmp/svcnet-lab"
    )]
    dir: PathBuf,
    /// The kustomize overlay whose DaemonSet and Deployment give the proxy's and the controller's
    /// command lines (read with `kubectl kustomize` at `up` and `add-node`).
    #[arg(
        long,
        global = true,
        env = "SVCNET_LAB_OVERLAY",
        default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../manifests/overlays/lab")
    )]
    overlay: PathBuf,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Create the VPC, nodes, control plane, proxies and the VPC agent.
    Up {
        #[arg(long, default_value_t = 2)]
        nodes: u32,
    },
    /// Remove every namespace, process and file of the lab (also after a crash).
    Down,
    /// Add a node (namespace, GCE instance, Node object, proxy), like a node pool scaling up.
    AddNode,
    /// Remove a node (its pods, Node object, instance, proxy, namespace), like a node pool scaling down.
    RemoveNode { name: String },
    /// Kill a component (etcd, apiserver, controller-manager, api-proxy, fake-gce, cloud-controller,
    /// vpc-agent, proxy-<node>): SIGKILL, a crash.
    Stop {
        name: String,
        /// SIGTERM instead (a clean shutdown).
        #[arg(long)]
        graceful: bool,
    },
    /// Start a stopped component again with its recorded command line.
    Start { name: String },
    /// Start upstream kube-proxy (the control plane's release) on NODE with the KubeProxyConfiguration
    /// its svcnet-proxy reads (stop `proxy-NODE` first); then it is component `kube-proxy-NODE`.
    KubeProxy { node: String },
    /// `up`, the GKE Service walkthrough step by step, `down`.
    Demo {
        #[arg(long, default_value_t = 2)]
        nodes: u32,
        /// Leave the lab up at the end to explore it.
        #[arg(long)]
        keep: bool,
    },
    /// Print what a failure needs: every node's iptables-save, the fake GCE's state, the logs' tails.
    Diagnose,
    /// Compact etcd's history up to its current revision (watchers resuming from before get 410 Gone);
    /// prints the revision.
    CompactEtcd,
    /// The real gcloud against the lab's fake GCE (run in the vpc namespace, the lab's project and
    /// its own gcloud configuration), e.g. `svcnet-lab gcloud compute forwarding-rules list`.
    Gcloud {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// (internal) The GCE network alone (LB IPs and GCE routes as kernel routes over DEV, the GCE
    /// firewall as the filter table), for the kind e2e: run inside its engine's namespace.
    #[command(hide = true)]
    GceNetwork {
        /// The fake GCE, e.g. http://172.18.0.1:8085.
        #[arg(long)]
        gce: String,
        /// The link every instance sits on.
        #[arg(long)]
        dev: String,
    },
    /// (internal) The VPC agent, run inside the vpc namespace.
    #[command(hide = true)]
    Agent,
    /// (internal) A pod's hostname server.
    #[command(hide = true)]
    ServeHostname {
        #[arg(long)]
        name: String,
        #[arg(long)]
        port: u16,
    },
    /// (internal) One HTTP request (body on stdin); prints the status line, then the body.
    #[command(hide = true)]
    Http {
        method: String,
        url: String,
        #[arg(long, default_value = "application/json")]
        content_type: String,
        #[arg(long, default_value_t = 10)]
        timeout: u64,
    },
    /// (internal) Steady traffic to each TARGET (ip:port): new connections and held ones, until
    /// STOP_FILE exists; prints `ready`, then a JSON tally per target.
    #[command(hide = true)]
    Load {
        targets: Vec<String>,
        /// Connections held open per target.
        #[arg(long, default_value_t = 2)]
        long: usize,
        #[arg(long)]
        stop_file: PathBuf,
    },
    /// (internal) One UDP datagram to ADDR:PORT; prints the reply.
    #[command(hide = true)]
    Udp {
        addr: String,
        #[arg(long, default_value_t = 2)]
        timeout: u64,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let dir = cli.dir;
    match cli.cmd {
        Cmd::Up { nodes } => cluster::up(&dir, nodes, &cli.overlay),
        Cmd::Down => cluster::down(&dir),
        Cmd::AddNode => nodes::add(&dir),
        Cmd::RemoveNode { name } => nodes::remove(&dir, &name),
        Cmd::Stop { name, graceful } => components::stop(&dir, &name, graceful),
        Cmd::Start { name } => components::start(&dir, &name),
        Cmd::KubeProxy { node } => kube_proxy::start(&dir, &node),
        Cmd::Demo { nodes, keep } => demo::run(&dir, nodes, keep, &cli.overlay),
        Cmd::Diagnose => diagnose::run(&dir),
        Cmd::Gcloud { args } => gcloud::main(&dir, &args),
        Cmd::CompactEtcd => components::compact_etcd(&dir),
        Cmd::Agent => vpc::agent(&dir),
        Cmd::GceNetwork { gce, dev } => gce_network::run(&gce, &dev),
        Cmd::ServeHostname { name, port } => pods::serve_hostname(&name, port),
        Cmd::Http {
            method,
            url,
            content_type,
            timeout,
        } => http::main(&method, &url, &content_type, timeout),
        Cmd::Udp { addr, timeout } => udp::main(&addr, timeout),
        Cmd::Load {
            targets,
            long,
            stop_file,
        } => load::main(&targets, long, &stop_file),
    }
}
