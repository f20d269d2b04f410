//! Command line: the stable contract other crates' tests and the lab rely on (see README.md).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

use crate::services::ServiceCidrs;

#[derive(Debug, Parser)]
#[command(
    name = "svcnet-apiserver",
    about = "Kubernetes API stand-in (a test double) for svcnet tests and the lab"
)]
pub struct Args {
    /// Address to serve plain HTTP on; port 0 picks a free port (printed as `listening on ADDR`).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Where to write a kubeconfig pointing at the bound address (no auth).
    #[arg(long)]
    pub kubeconfig_out: Option<PathBuf>,
    /// Keep objects across restarts in this JSON file (rewritten after every change).
    #[arg(long)]
    pub state_file: Option<PathBuf>,
    /// ClusterIP range, or two comma-separated ranges of different families for a dual-stack cluster (the
    /// first is the default family), like kube-apiserver's `--service-cluster-ip-range`.
    #[arg(long, default_value = "10.96.0.0/16")]
    pub service_cidr: ServiceCidrs,
    /// NodePort range, `A-B` inclusive.
    #[arg(long, default_value = "30000-32767", value_parser = parse_range)]
    pub nodeport_range: (u16, u16),
    /// Interval between BOOKMARK events on watches that allow them.
    #[arg(long, default_value_t = 60_000)]
    pub bookmark_interval_ms: u64,
}

fn parse_range(s: &str) -> Result<(u16, u16), String> {
    let (a, b) = s.split_once('-').ok_or("expected A-B")?;
    let a: u16 = a.trim().parse().map_err(|e| format!("{e}"))?;
    let b: u16 = b.trim().parse().map_err(|e| format!("{e}"))?;
    if a == 0 || a > b {
        return Err("expected 0 < A <= B".into());
    }
    Ok((a, b))
}
