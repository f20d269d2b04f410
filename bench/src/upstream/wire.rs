//! Part U's namespaces: one for the control plane, and one node namespace per proxy under test,
//! linked to it by a veth pair and to nothing else (never the machine's own namespace).
//!
//! In a node namespace the whole service range, the endpoint range and the probe endpoints are
//! local addresses: a connect that no rule diverts, or that reaches an old endpoint, is refused
//! at once, and only the probe endpoint (where the agent listens) accepts.

use svcnet_netns::link;

use crate::error::BenchError;
use crate::netns::Netns;

/// The API server's address: on the control-plane namespace's `lo`, routed from the nodes.
pub const API_IP: &str = "10.250.255.1";
/// The node's InternalIP (p4's Node object).
pub const NODE_IP: &str = crate::netns::ENDPOINT_ADDR;
/// The Services' range (the API server's `--service-cluster-ip-range`).
pub const SERVICE_CIDR: &str = crate::netns::SERVICE_CIDR;
/// Every endpoint p4 loads and the churn writes (nothing listens there).
pub const ENDPOINT_CIDR: &str = "10.128.0.0/9";
/// The probe endpoints: the agent listens on [`PROBE_IP`].
pub const PROBE_CIDR: &str = crate::netns::LOCAL_ENDPOINTS_CIDR;
pub const PROBE_IP: &str = "10.201.0.1";

/// The control plane's namespace: `lo` (up, as every guard has it) with [`API_IP`].
pub fn control_plane() -> Result<Netns, BenchError> {
    let ns = Netns::create("up-cp")?;
    link::addr(&ns.name, "lo", &format!("{API_IP}/32"))?;
    Ok(ns)
}

/// Node `round`'s namespace, linked to `cp` by its own veth pair and /30 (10.250.<round>.0/30): the
/// pair of an earlier node may outlive that node's namespace for a while (its processes still
/// exiting), so names and addresses are never reused.
pub fn node(tag: &str, round: usize, cp: &Netns) -> Result<Netns, BenchError> {
    let ns = Netns::create(tag)?;
    let octet = u8::try_from(round % 250).unwrap_or(0);
    let (cp_link, node_link) = (format!("10.250.{octet}.1"), format!("10.250.{octet}.2"));
    let peer = format!("upc{octet}");
    link::addr(&ns.name, "lo", &format!("{NODE_IP}/32"))?;
    link::veth(&ns.name, "up0", &cp.name, &peer)?;
    link::addr(&ns.name, "up0", &format!("{node_link}/30"))?;
    link::addr(&cp.name, &peer, &format!("{cp_link}/30"))?;
    link::route(&ns.name, &format!("{API_IP}/32"), Some(&cp_link), None)?;
    for cidr in [SERVICE_CIDR, ENDPOINT_CIDR, PROBE_CIDR] {
        link::local_route(&ns.name, cidr, "lo")?;
    }
    Ok(ns)
}
