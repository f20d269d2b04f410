//! The kubelet's record of the pods it runs, `<dir>/kubelet.json`: only the agent writes it (atomically:
//! temp file + rename), so a restarted agent carries on; `pods` of the e2e test reads it to compare the
//! API with what really runs.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::procs::Process;

/// A pod the agent runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunningPod {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    /// Its `app` label (empty without).
    pub app: String,
    pub node: String,
    /// The pod's network namespace and the bridge side of its veth.
    pub netns: String,
    pub link: String,
    pub ip: Ipv4Addr,
    /// Its IPv6 address (None in a record made before the lab carried IPv6).
    #[serde(default)]
    pub ip6: Option<Ipv6Addr>,
    pub port: u16,
    /// Being deleted: still serving until its drain ends.
    #[serde(default)]
    pub terminating: bool,
    /// Its hostname server (None until it runs): `down` stops it by this ([`crate::pods::stop`]).
    #[serde(default)]
    pub server: Option<Process>,
}

impl RunningPod {
    /// `status.podIPs`: IPv4 first, as the cluster's families are ordered.
    pub fn pod_ips(&self) -> serde_json::Value {
        let mut ips = vec![serde_json::json!({"ip": self.ip.to_string()})];
        ips.extend(self.ip6.map(|ip6| serde_json::json!({"ip": ip6.to_string()})));
        serde_json::Value::Array(ips)
    }
}

pub fn path(dir: &Path) -> PathBuf {
    dir.join("kubelet.json")
}

/// What the agent runs (empty when it has not run anything yet).
pub fn load(dir: &Path) -> Vec<RunningPod> {
    std::fs::read_to_string(path(dir))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

pub fn save(dir: &Path, pods: &[RunningPod]) -> Result<()> {
    let tmp = dir.join("kubelet.json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(pods)?)?;
    std::fs::rename(&tmp, path(dir)).context("write kubelet.json")
}
