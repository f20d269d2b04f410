//! The lab's state file (`<dir>/state.json`): what `up` made, so `down` cleans up after a crash, and what
//! `run`/`scale` made (pods), which the VPC agent reads to write EndpointSlices. Written atomically
//! (temp file + rename) because the agent reads it concurrently.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

// The fake GCE project the lab makes. The controller and proxy read theirs from manifests/overlays/lab
// (gce.conf, config.conf, the Deployment's flags), which must name the same values (project, zone, node
// tag, cluster CIDR 10.64.0.0/14, control plane on VPC_IP).
pub const PROJECT: &str = "svcnet-lab";
pub const REGION: &str = "us-central1";
pub const ZONE: &str = "us-central1-b";
pub const NODE_TAG: &str = "svcnet-lab-node";
/// The VPC router's address on every node link; the control plane listens on it.
pub const VPC_IP: &str = "10.128.0.1";
pub const API_PORT: u16 = 6443;
pub const GCE_PORT: u16 = 8085;
pub const CLIENT_GW: &str = "192.0.2.1";
pub const CLIENT_IP: &str = "192.0.2.10";
/// A second outside client (`<prefix>-client2`, link `cl2`): a source outside a Service's
/// loadBalancerSourceRanges that is not the first client's.
pub const CLIENT2_GW: &str = "198.18.0.1";
pub const CLIENT2_IP: &str = "198.18.0.10";
pub const EXTERNAL_RANGE: &str = "203.0.113.0/24";
/// The pods' CIDR (node N gets 10.64.N.0/24); the overlay's proxy config names the same.
pub const CLUSTER_CIDR: &str = "10.64.0.0/14";

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Node {
    pub name: String,
    pub ns: String,
    pub ip: String,
    /// 1-based index: pod CIDR 10.64.<index>.0/24, VPC link `n<index>`.
    pub index: u32,
}

impl Node {
    pub fn pod_cidr(&self) -> String {
        format!("10.64.{}.0/24", self.index)
    }
    pub fn bridge_ip(&self) -> String {
        format!("10.64.{}.1", self.index)
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Pod {
    pub name: String,
    /// The `app` label (the deployment name).
    pub app: String,
    pub ns: String,
    pub ip: String,
    pub node: String,
    pub port: u16,
    /// Interface index on the node's bridge side (`p<seq>`).
    pub seq: u32,
    /// Being deleted: still running, listed as terminating (not ready, still serving) until its
    /// grace period ends, as a Pod with a deletionTimestamp is.
    #[serde(default)]
    pub terminating: bool,
}

/// A long-running component (control plane or proxy) with what is needed to start it again.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Proc {
    pub pid: u32,
    pub ns: String,
    pub bin: PathBuf,
    pub args: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct State {
    pub prefix: String,
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    /// Every process started by the lab (also found through `ip netns pids` on `down`).
    pub pids: Vec<u32>,
    pub next_seq: u32,
    /// Named components (`fake-gce`, `apiserver`, `cloud-controller`, `vpc-agent`, `proxy-<node>`), so
    /// `stop`/`start` can kill and relaunch one with its recorded command line.
    #[serde(default)]
    pub procs: BTreeMap<String, Proc>,
    /// The kustomize overlay the proxy and controller command lines come from (`crate::manifest`).
    #[serde(default)]
    pub overlay: PathBuf,
}

impl State {
    pub fn vpc(&self) -> String {
        format!("{}-vpc", self.prefix)
    }
    pub fn client(&self) -> String {
        format!("{}-client", self.prefix)
    }
    pub fn client2(&self) -> String {
        format!("{}-client2", self.prefix)
    }
}

pub fn path(dir: &Path) -> PathBuf {
    dir.join("state.json")
}

pub fn load(dir: &Path) -> Result<State> {
    let p = path(dir);
    let text =
        std::fs::read_to_string(&p).with_context(|| format!("read {} (is the lab up?)", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parse {}", p.display()))
}

pub fn save(dir: &Path, st: &State) -> Result<()> {
    let tmp = dir.join("state.json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(st)?)?;
    std::fs::rename(&tmp, path(dir))?;
    Ok(())
}

/// A fresh unique prefix: pid and clock, short enough for readable namespace names.
pub fn new_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("svcnet-lab-{:x}{:04x}", std::process::id(), nanos & 0xffff)
}
