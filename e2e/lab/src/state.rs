//! The lab's state file (`<dir>/state.json`): what `up` made (namespaces, nodes, components and their
//! command lines, kubeconfigs), so `down` cleans up after a crash and `stop`/`start` relaunch a component.
//! Written atomically (temp file + rename) because the agent reads it concurrently. The pods the agent
//! runs are in its own file (`crate::kubelet`).

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
pub const GCE_PORT: u16 = 8085;
pub const CLIENT_GW: &str = "192.0.2.1";
pub const CLIENT_IP: &str = "192.0.2.10";
/// A second outside client (`<prefix>-client2`, link `cl2`): a source outside a Service's
/// loadBalancerSourceRanges that is not the first client's.
pub const CLIENT2_GW: &str = "198.18.0.1";
pub const CLIENT2_IP: &str = "198.18.0.10";
/// The `vm` namespace's address: in the nodes' subnet (10.128.0.0/20, the fake's internal range)
/// but far above the node addresses (10.128.0.<index+1>) and the internal IPs the fake hands out
/// (the first free ones from the bottom). It is no GCE instance, so `gcloud compute instances list`
/// shows the nodes only, as in the walkthrough.
pub const VM_IP: &str = "10.128.15.200";
pub const EXTERNAL_RANGE: &str = "203.0.113.0/24";
/// The pods' CIDR node IPAM hands /24s out of; the overlay's proxy config names the same.
pub const CLUSTER_CIDR: &str = "10.64.0.0/14";
/// The pods' IPv6 CIDR node IPAM hands /64s out of (the cluster is dual-stack, IPv4 first).
pub const CLUSTER_CIDR6: &str = "fd00:10:64::/56";
/// The Services' ranges, IPv4 first: a Service without `ipFamilies` stays IPv4 as before.
pub const SERVICE_CIDRS: &str = "10.96.0.0/16,fd00:10:96::/108";
/// The VPC router's IPv6 address on every node link (the nodes' IPv6 gateway). Nodes take
/// `fd20:128::<index+1>` and the `vm` [`VM_IP6`]: a ULA range of the lab's own, outside the fake's
/// pools for subnetworks' IPv6 prefixes.
pub const VPC_IP6: &str = "fd20:128::1";
pub const VM_IP6: &str = "fd20:128::15:200";
/// The outside clients' IPv6 (documentation prefix, outside the fake's external IPv6 pool).
pub const CLIENT_GW6: &str = "2001:db8:c0::1";
pub const CLIENT_IP6: &str = "2001:db8:c0::10";
pub const CLIENT2_GW6: &str = "2001:db8:c1::1";
pub const CLIENT2_IP6: &str = "2001:db8:c1::10";
/// Where `kubectl proxy` (admin credentials) listens inside the `vpc` namespace: the lab's own API
/// calls are plain HTTP to it; the components talk TLS to the API server with their own identities.
pub const API_PROXY: &str = "127.0.0.1:8001";

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Node {
    pub name: String,
    pub ns: String,
    pub ip: String,
    /// 1-based index: node IP 10.128.0.<index+1>, VPC link `n<index>`.
    pub index: u32,
    /// The podCIDR kube-controller-manager's node IPAM gave the Node (its bridge takes the first host).
    #[serde(default)]
    pub pod_cidr: String,
    /// The node's IPv6 address on `eth0` (`fd20:128::<index+1>`; empty in a lab made before IPv6).
    #[serde(default)]
    pub ip6: String,
    /// The IPv6 podCIDR of the Node's `spec.podCIDRs` (its bridge takes the first host).
    #[serde(default)]
    pub pod_cidr6: String,
}

impl Node {
    /// The first host of the pod CIDR: `cbr0`'s address, the pods' gateway.
    pub fn bridge_ip(&self) -> Option<std::net::Ipv4Addr> {
        let net: ipnet::Ipv4Net = self.pod_cidr.parse().ok()?;
        net.hosts().next()
    }

    /// `::1` of the IPv6 pod CIDR: `cbr0`'s IPv6 address, the pods' IPv6 gateway (`::0` is the
    /// subnet-router anycast address).
    pub fn bridge_ip6(&self) -> Option<std::net::Ipv6Addr> {
        self.pod_ip6(1)
    }

    /// A pod's IPv6 address: as far into the IPv6 podCIDR as `ip` is into the IPv4 one.
    pub fn pod_ip6_of(&self, ip: std::net::Ipv4Addr) -> Option<std::net::Ipv6Addr> {
        let net: ipnet::Ipv4Net = self.pod_cidr.parse().ok()?;
        if !net.contains(&ip) {
            return None;
        }
        self.pod_ip6(u128::from(u32::from(ip) - u32::from(net.network())))
    }

    /// The IPv6 address `offset` above the IPv6 pod CIDR's network address (a pod takes the offset
    /// its IPv4 address has in the IPv4 pod CIDR), if the CIDR holds it.
    pub fn pod_ip6(&self, offset: u128) -> Option<std::net::Ipv6Addr> {
        let net: ipnet::Ipv6Net = self.pod_cidr6.parse().ok()?;
        let ip = std::net::Ipv6Addr::from(u128::from(net.network()).checked_add(offset)?);
        net.contains(&ip).then_some(ip)
    }
}

/// The IPv6 address of node `index` (1-based).
pub fn node_ip6(index: u32) -> String {
    format!("fd20:128::{}", index + 1)
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
    /// Every process started by the lab (also found through `ip netns pids` on `down`).
    pub pids: Vec<u32>,
    /// Named components (`etcd`, `apiserver`, `controller-manager`, `api-proxy`, `fake-gce`,
    /// `cloud-controller`, `vpc-agent`, `proxy-<node>`), so
    /// `stop`/`start` can kill and relaunch one with its recorded command line.
    #[serde(default)]
    pub procs: BTreeMap<String, Proc>,
    /// The kustomize overlay the proxy and controller command lines come from (`crate::manifest`).
    #[serde(default)]
    pub overlay: PathBuf,
    /// cluster-admin kubeconfig (client certificate) of the control plane.
    #[serde(default)]
    pub admin_kubeconfig: PathBuf,
    /// The ServiceAccount kubeconfigs svcnet-proxy and svcnet-cloud-controller run with.
    #[serde(default)]
    pub proxy_kubeconfig: PathBuf,
    #[serde(default)]
    pub controller_kubeconfig: PathBuf,
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
    /// A VM inside the VPC that is not a node (`vm`, [`VM_IP`]).
    pub fn vm(&self) -> String {
        format!("{}-vm", self.prefix)
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
