//! The random-cluster generator shared by the property tests (`props.rs`) and the differential test
//! against upstream kube-proxy (`differential.rs`): Services of every type and policy with their
//! EndpointSlices, hostile strings included (the differential test replaces those the API refuses).
#![allow(dead_code)]

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use proptest::prelude::*;
use serde_json::{Value, json};

pub const HOSTILE: &[&str] = &[
    "evil\" -j ACCEPT",
    "aa bb zz",
    "x\ny",
    "$(reboot)",
    "x -j DROP",
    "semi;colon",
    "Ünïcode",
    "quote'single",
    "back\\slash",
    "x\nCOMMIT\n*filter",
];

#[derive(Clone, Debug)]
pub struct Svc {
    pub name: String,
    pub port_name: String,
    pub kind: u8,
    pub udp: bool,
    pub etp_local: bool,
    pub itp_local: bool,
    pub affinity: bool,
    pub ranges: Vec<String>,
    pub ext_ip: bool,
    pub annotation: String,
    pub eps: Vec<(u8, bool, bool, bool)>, // node, ready, terminating, zone hint
    /// Extra ready endpoints: sometimes past the endpoint-tree threshold (64) of the tree layout.
    pub bulk: usize,
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z][a-z0-9-]{0,6}[a-z0-9]",
        1 => prop::sample::select(HOSTILE).prop_map(str::to_string),
    ]
}

pub fn svc() -> impl Strategy<Value = Svc> {
    (
        name(),
        prop_oneof![3 => Just(String::new()), 2 => name()],
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.2),
        any::<bool>(),
        prop::collection::vec(
            prop::sample::select(vec![
                "192.168.0.0/16",
                "203.0.113.0/24",
                "bogus\" -j ACCEPT",
                "10.140.0.0/20",
            ]),
            0..3,
        ),
        prop::bool::weighted(0.3),
        prop::sample::select(HOSTILE),
        prop::collection::vec(
            (0u8..3, prop::bool::weighted(0.8), any::<bool>(), any::<bool>()),
            0..5,
        ),
        prop_oneof![6 => Just(0usize), 1 => 60usize..150],
    )
        .prop_map(
            |(name, port_name, kind, udp, etp_local, itp_local, affinity, ranges, ext_ip, ann, eps, bulk)| {
                Svc {
                    name,
                    port_name,
                    kind,
                    udp,
                    etp_local,
                    itp_local,
                    affinity,
                    ranges: ranges.into_iter().map(str::to_string).collect(),
                    ext_ip,
                    annotation: ann.to_string(),
                    eps,
                    bulk,
                }
            },
        )
}

/// The Services and EndpointSlices of `svcs` (namespace `prop`), typed.
pub fn objects(svcs: &[Svc]) -> (Vec<Service>, Vec<EndpointSlice>) {
    let (services, slices) = objects_json(svcs);
    (typed(services), typed(slices))
}

fn typed<T: serde::de::DeserializeOwned>(objects: Vec<Value>) -> Vec<T> {
    objects
        .into_iter()
        .map(|o| serde_json::from_value(o).expect("generated object"))
        .collect()
}

/// The same objects as JSON (what the differential test sends to the API server).
pub fn objects_json(svcs: &[Svc]) -> (Vec<Value>, Vec<Value>) {
    let mut services = Vec::new();
    let mut slices = Vec::new();
    for (i, s) in svcs.iter().enumerate() {
        // Valid names get an index so they are unique; hostile ones are refused anyway.
        let name = if HOSTILE.contains(&s.name.as_str()) {
            s.name.clone()
        } else {
            format!("s{i}-{}", s.name)
        };
        let proto = if s.udp { "UDP" } else { "TCP" };
        let ty = ["ClusterIP", "NodePort", "LoadBalancer"][s.kind as usize];
        let mut port = json!({"port": 80 + i, "protocol": proto});
        if !s.port_name.is_empty() {
            port["name"] = json!(s.port_name);
        }
        if s.kind > 0 {
            port["nodePort"] = json!(30000 + i);
        }
        let mut spec = json!({
            "type": ty,
            "clusterIP": format!("10.96.{}.{}", i / 200, i % 200 + 1),
            "ports": [port],
            "internalTrafficPolicy": if s.itp_local { "Local" } else { "Cluster" },
        });
        if s.kind > 0 {
            spec["externalTrafficPolicy"] = json!(if s.etp_local { "Local" } else { "Cluster" });
        }
        if s.kind == 2 && s.etp_local {
            spec["healthCheckNodePort"] = json!(32000 + i);
        }
        if s.affinity {
            spec["sessionAffinity"] = json!("ClientIP");
        }
        if !s.ranges.is_empty() {
            spec["loadBalancerSourceRanges"] = json!(s.ranges);
        }
        if s.ext_ip {
            spec["externalIPs"] = json!([format!("198.51.100.{}", i + 1)]);
        }
        let mut svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "prop",
                "annotations": {"service.beta.kubernetes.io/load-balancer-source-ranges": s.annotation}},
            "spec": spec,
        });
        if s.kind == 2 {
            svc["status"] = json!({"loadBalancer": {"ingress": [{"ip": format!("35.1.{i}.1")}]}});
        }
        services.push(svc);
        let mut endpoints: Vec<_> = s
            .eps
            .iter()
            .enumerate()
            .map(|(j, (node, ready, term, hint))| {
                let mut e = json!({
                    "addresses": [format!("10.76.{node}.{}", i * 8 + j + 1)],
                    "conditions": {"ready": ready, "serving": *ready || *term, "terminating": term},
                    "nodeName": format!("node-{node}"),
                });
                if *hint {
                    e["hints"] = json!({"forZones": [{"name": format!("z{node}")}]});
                }
                e
            })
            .collect();
        endpoints.extend((0..s.bulk).map(|k| {
            json!({
                "addresses": [format!("10.{}.{}.{}", 100 + i, k / 250, k % 250 + 1)],
                "conditions": {"ready": true, "serving": true, "terminating": false},
                "nodeName": format!("node-{}", k % 3),
            })
        }));
        let mut sport = json!({"port": 8000 + i, "protocol": proto});
        if !s.port_name.is_empty() {
            sport["name"] = json!(s.port_name);
        }
        slices.push(json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": format!("slice-{i}"), "namespace": "prop",
                "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "ports": [sport],
            "endpoints": endpoints,
        }));
    }
    (services, slices)
}
