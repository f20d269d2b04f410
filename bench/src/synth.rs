//! Synthetic cluster state built directly in Rust: N ClusterIP services with M endpoints each.
//!
//! Cluster IPs are pseudo-random (fixed seed) inside 10.96.0.0/12, like an apiserver allocator hands
//! them out, so the dispatch tree sees a realistic spread rather than a dense sequential block.
//! Service names sort in creation order (`svc-00000` ..), so the last service is the last rule of
//! upstream's flat KUBE-SERVICES list.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;

use svcnet_proxy::model::{Endpoint, NodeFacts, Protocol, ProxyState, ServicePort, ServicePortName};

/// The port every synthetic service listens on.
pub const SERVICE_PORT: u16 = 80;
/// The port every synthetic endpoint listens on.
pub const ENDPOINT_PORT: u16 = 8080;
pub const NODE_NAME: &str = "bench-node";

const SERVICE_CIDR_BASE: u32 = 0x0a60_0000; // 10.96.0.0
const SERVICE_CIDR_BITS: u32 = 20; // /12
const ENDPOINT_BASE: u32 = 0x0a80_0000; // 10.128.0.0/9 (pod IPs)

/// `n` distinct cluster IPs in 10.96.0.0/12 (never the network address), the same for a given seed.
pub fn cluster_ips(n: usize, seed: u64) -> Vec<Ipv4Addr> {
    let mut rng = SplitMix(seed);
    let mut seen = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    let cap = (1usize << SERVICE_CIDR_BITS) - 2;
    while out.len() < n.min(cap) {
        let off = (rng.next() % (1u64 << SERVICE_CIDR_BITS)) as u32;
        if off == 0 || !seen.insert(off) {
            continue;
        }
        out.push(Ipv4Addr::from(SERVICE_CIDR_BASE + off));
    }
    out
}

/// SplitMix64: tiny, seedable, good enough to scatter addresses.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

pub fn service_name(i: usize) -> ServicePortName {
    ServicePortName {
        namespace: "bench".into(),
        name: format!("svc-{i:05}"),
        port: "http".into(),
        protocol: Protocol::Tcp,
    }
}

pub fn service_port(name: ServicePortName, ip: Ipv4Addr) -> ServicePort {
    ServicePort {
        name,
        cluster_ip: IpAddr::V4(ip),
        port: SERVICE_PORT,
        node_port: None,
        external_ips: vec![],
        load_balancer_vips: vec![],
        source_ranges: None,
        health_check_node_port: None,
        session_affinity: None,
        external_policy_local: false,
        internal_policy_local: false,
    }
}

/// A ready endpoint on some other node.
pub fn endpoint(ip: Ipv4Addr, port: u16) -> Endpoint {
    Endpoint {
        ip: IpAddr::V4(ip),
        port,
        ready: true,
        serving: true,
        terminating: false,
        node_name: Some("other-node".into()),
        hints: None,
    }
}

/// The `k`-th pod IP (distinct for k < 2^23 - 1).
pub fn pod_ip(k: usize) -> Ipv4Addr {
    Ipv4Addr::from(ENDPOINT_BASE + 1 + (k % 0x007f_fffe) as u32)
}

/// One service per entry of `ips` (service `i` gets `ips[i]`), each with `eps_per_service` endpoints.
pub fn state(ips: &[Ipv4Addr], eps_per_service: usize) -> ProxyState {
    let mut st = ProxyState::default();
    for (i, ip) in ips.iter().enumerate() {
        let name = service_name(i);
        let eps = (0..eps_per_service)
            .map(|j| endpoint(pod_ip(i * eps_per_service + j), ENDPOINT_PORT))
            .collect();
        st.endpoints.insert(name.clone(), eps);
        st.services.insert(name.clone(), service_port(name, *ip).into());
    }
    st
}

/// The same cluster as API objects (what the daemon's reflectors hold): one Service and one
/// EndpointSlice per entry of `ips`, shared as the stores share them.
pub fn k8s_objects(ips: &[Ipv4Addr], eps_per_service: usize) -> (Vec<Arc<Service>>, Vec<Arc<EndpointSlice>>) {
    let mut services = Vec::with_capacity(ips.len());
    let mut slices = Vec::with_capacity(ips.len());
    for (i, ip) in ips.iter().enumerate() {
        let name = service_name(i);
        services.push(Arc::new(k8s_service(&name.name, *ip, 0)));
        let endpoints: Vec<serde_json::Value> = (0..eps_per_service)
            .map(|j| {
                serde_json::json!({
                    "addresses": [pod_ip(i * eps_per_service + j).to_string()],
                    "conditions": {"ready": true, "serving": true, "terminating": false},
                    "nodeName": "other-node",
                })
            })
            .collect();
        let slice = serde_json::json!({
            "metadata": {"name": format!("{}-abcde", name.name), "namespace": name.namespace,
                         "labels": {"kubernetes.io/service-name": name.name}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": ENDPOINT_PORT, "protocol": "TCP"}],
            "endpoints": endpoints,
        });
        if let Ok(s) = serde_json::from_value(slice) {
            slices.push(Arc::new(s));
        }
    }
    (services, slices)
}

/// Service `name` at `ip`; `generation` changes its annotations (a new object version).
pub fn k8s_service(name: &str, ip: Ipv4Addr, generation: u32) -> Service {
    let v = serde_json::json!({
        "metadata": {"name": name, "namespace": "bench", "annotations": {"generation": generation.to_string()}},
        "spec": {"clusterIP": ip.to_string(), "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": ENDPOINT_PORT}]},
    });
    serde_json::from_value(v).unwrap_or_default()
}

pub fn node() -> NodeFacts {
    NodeFacts {
        name: NODE_NAME.into(),
        ips: vec![IpAddr::V4(Ipv4Addr::new(10, 200, 0, 2))],
        interface_ips: vec![IpAddr::V4(Ipv4Addr::new(10, 200, 0, 2))],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
