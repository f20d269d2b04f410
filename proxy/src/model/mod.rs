//! The proxy's view of the cluster: plain data built from Services, EndpointSlices and this node.
//! Everything here is pure; `from_k8s` converts API objects (treated as untrusted) into it. The
//! bottom layer: it knows no flag, setting, mode or command.
//!
//! Never imports: crate::config, crate::settings, crate::cli, crate::sync, crate::iptables,
//! crate::nftables, crate::offline, crate::daemon.

mod cache;
pub mod endpoints;
mod error;
pub mod intern;
pub mod ip;
mod node;
pub mod record;
pub mod service;
pub mod topology;
mod validate;

#[cfg(test)]
pub(crate) mod arbitrary;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;

pub use cache::{Changed, ModelCache};
pub use endpoints::{endpoints_from_slices, merge_slices, parse_slice};
pub use error::ModelError;
pub use intern::Interner;
pub use record::{ServiceRecord, SlicePort, SliceRecord};
pub use service::service_ports_from_service;
pub use topology::{Categorized, categorize};

/// IP family of one iptables payload (iptables vs ip6tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Family {
    #[default]
    V4,
    V6,
}

impl Family {
    pub fn of(ip: &IpAddr) -> Family {
        match ip {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }
    pub fn matches(self, ip: &IpAddr) -> bool {
        Family::of(ip) == self
    }
    /// The label used by upstream metrics (`IPv4` / `IPv6`).
    pub fn label(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    /// Lower-case, as used in chain hashes and `-m`/`-p` arguments.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }
    pub fn parse_k8s(s: &str) -> Option<Protocol> {
        match s {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }
}

/// `namespace/name[:portName]` plus protocol: the identity of one service port, as upstream.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServicePortName {
    pub namespace: String,
    pub name: String,
    pub port: String,
    pub protocol: Protocol,
}

impl ServicePortName {
    pub fn service_key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Prints `ns/name:port`, or `ns/name` for an unnamed port: the string upstream hashes and prints
/// (`ServicePortName.String()` in pkg/proxy/types.go). Kubernetes 1.5 kept the colon for unnamed ports,
/// which is why 2017-era walkthroughs show other chain names.
impl fmt::Display for ServicePortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)?;
        if !self.port.is_empty() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

/// One port of one Service, for one IP family.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServicePort {
    pub name: ServicePortName,
    pub cluster_ip: IpAddr,
    pub port: u16,
    pub node_port: Option<u16>,
    pub external_ips: Vec<IpAddr>,
    /// Load-balancer ingress IPs that need VIP rules (ipMode Proxy excluded).
    pub load_balancer_vips: Vec<IpAddr>,
    /// `None`: no source restriction. `Some(empty)`: restricted, but nothing valid for this family
    /// (svcnet fails closed and drops, see docs).
    pub source_ranges: Option<Vec<IpNet>>,
    pub health_check_node_port: Option<u16>,
    /// ClientIP affinity timeout in seconds.
    pub session_affinity: Option<u32>,
    pub external_policy_local: bool,
    pub internal_policy_local: bool,
}

impl ServicePort {
    pub fn externally_accessible(&self) -> bool {
        self.node_port.is_some() || !self.load_balancer_vips.is_empty() || !self.external_ips.is_empty()
    }
    /// Upstream's `UsesClusterEndpoints`: also for external traffic with a Local policy, whose
    /// short circuit for pod and node sources goes to the cluster endpoints.
    pub fn uses_cluster_endpoints(&self) -> bool {
        !self.internal_policy_local || self.externally_accessible()
    }
    pub fn uses_local_endpoints(&self) -> bool {
        self.internal_policy_local || (self.externally_accessible() && self.external_policy_local)
    }
}

/// One endpoint of one service port. Kept small: a large cluster holds 100k of them. The node name is
/// shared (interned) between the endpoints on one node; topology hints are rare and boxed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    pub ip: IpAddr,
    pub port: u16,
    pub ready: bool,
    pub serving: bool,
    pub terminating: bool,
    pub node_name: Option<Arc<str>>,
    /// `None` when the endpoint has neither zone nor node hints.
    pub hints: Option<Box<Hints>>,
}

/// Topology hints of one endpoint (`hints.forZones` / `hints.forNodes`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Hints {
    pub zones: Vec<String>,
    pub nodes: Vec<String>,
}

/// The endpoints of one service port, sorted by `ip:port`. Shared: when a port's endpoints come from a
/// single EndpointSlice (the common case) the slice's record and the state hold the same list.
pub type Endpoints = Arc<[Endpoint]>;

impl Endpoint {
    /// Zones this endpoint is hinted for (empty: no zone hints).
    pub fn zone_hints(&self) -> &[String] {
        self.hints.as_deref().map_or(&[], |h| h.zones.as_slice())
    }
    /// Nodes this endpoint is hinted for (empty: no node hints).
    pub fn node_hints(&self) -> &[String] {
        self.hints.as_deref().map_or(&[], |h| h.nodes.as_slice())
    }

    /// `ip:port`, IPv6 in brackets: the string upstream hashes into KUBE-SEP names and DNATs to.
    pub fn addr(&self) -> String {
        match self.ip {
            IpAddr::V4(ip) => format!("{ip}:{}", self.port),
            IpAddr::V6(ip) => format!("[{ip}]:{}", self.port),
        }
    }
    pub fn is_local(&self, node: &str) -> bool {
        self.node_name.as_deref() == Some(node)
    }
}

/// Facts about the node the proxy runs on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeFacts {
    pub name: String,
    /// The node's primary IPs (used for `--nodeport-addresses primary` and FW allow-from-node).
    pub ips: Vec<IpAddr>,
    /// All local interface addresses (used to resolve `--nodeport-addresses` CIDRs).
    pub interface_ips: Vec<IpAddr>,
    pub labels: BTreeMap<String, String>,
    pub pod_cidrs: Vec<IpNet>,
}

impl NodeFacts {
    pub fn zone(&self) -> Option<&str> {
        self.labels
            .get("topology.kubernetes.io/zone")
            .map(String::as_str)
            .filter(|z| !z.is_empty())
    }
}

/// Everything the renderer needs for one family: service ports and their endpoints.
#[derive(Clone, Debug, Default)]
pub struct ProxyState {
    pub services: BTreeMap<ServicePortName, Arc<ServicePort>>,
    pub endpoints: BTreeMap<ServicePortName, Endpoints>,
    /// Problems found while converting API objects; the objects involved were skipped.
    pub errors: Vec<ModelError>,
}

impl ProxyState {
    /// Builds the state for one family from API objects (files, tests); the daemon keeps records and
    /// a [`ModelCache`] instead, with the same conversion code. Bad objects are reported, never fatal.
    pub fn from_k8s<'a>(
        services: impl IntoIterator<Item = &'a k8s_openapi::api::core::v1::Service>,
        slices: impl IntoIterator<Item = &'a k8s_openapi::api::discovery::v1::EndpointSlice>,
        family: Family,
    ) -> ProxyState {
        let mut state = ProxyState::default();
        for svc in services {
            let (ports, errors) = service_ports_from_service(svc, family);
            for p in ports {
                state.services.insert(p.name.clone(), Arc::new(p));
            }
            state.errors.extend(errors);
        }
        let (eps, errs) = endpoints_from_slices(slices, family);
        state.endpoints = eps;
        state.errors.extend(errs);
        state
    }
}
