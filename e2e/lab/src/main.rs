//! svcnet-lab: a GKE-like cluster made of network namespaces on one machine (see README.md).
#![forbid(unsafe_code)]

mod cluster;
mod demo;
mod endpoints;
mod firewall;
mod http;
mod netns;
mod nodes;
mod pods;
mod procs;
mod state;
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
    /// Start pods labelled app=NAME running a hostname server.
    Run {
        name: String,
        #[arg(long, default_value_t = 1)]
        replicas: usize,
        #[arg(long, default_value_t = 9376)]
        port: u16,
    },
    /// Change the number of pods of NAME.
    Scale {
        name: String,
        #[arg(long)]
        replicas: usize,
    },
    /// Delete every pod of NAME.
    Delete { name: String },
    /// `up`, the GKE Service walkthrough step by step, `down`.
    Demo {
        #[arg(long, default_value_t = 2)]
        nodes: u32,
        /// Leave the lab up at the end to explore it.
        #[arg(long)]
        keep: bool,
    },
    /// Print what a failure needs: a node's iptables-save, the fake GCE's state, control-plane logs.
    Diagnose,
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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let dir = cli.dir;
    match cli.cmd {
        Cmd::Up { nodes } => cluster::up(&dir, nodes),
        Cmd::Down => cluster::down(&dir),
        Cmd::Run { name, replicas, port } => pods::scale(&dir, &name, replicas, Some(port)),
        Cmd::Scale { name, replicas } => pods::scale(&dir, &name, replicas, None),
        Cmd::Delete { name } => pods::delete(&dir, &name),
        Cmd::Demo { nodes, keep } => demo::run(&dir, nodes, keep),
        Cmd::Diagnose => demo::diagnose(&dir),
        Cmd::Agent => vpc::agent(&dir),
        Cmd::ServeHostname { name, port } => pods::serve_hostname(&name, port),
        Cmd::Http {
            method,
            url,
            content_type,
            timeout,
        } => http::main(&method, &url, &content_type, timeout),
    }
}
