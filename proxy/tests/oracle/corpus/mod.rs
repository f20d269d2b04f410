//! The states the differential test compares, as steps of API writes: the fixed corpus (every golden
//! case, [`golden`]) and the seeded random one ([`random`]), each a creation followed by scripted
//! updates and deletions so partial syncs are compared too. Objects are adapted to a real API server:
//! addresses and ports it allocates are left to it (clusterIP, nodePort, healthCheckNodePort),
//! `status` goes through the status subresource, and the inputs' own node name becomes [`NODE`].

pub mod golden;
pub mod random;

use serde_json::{Value, json};

use super::{NODE, ZONE};

/// One write of a step.
#[derive(Clone, Debug)]
pub enum Write {
    /// `kubectl apply --server-side` of these objects, in order.
    Apply(Vec<Value>),
    /// The same, on the status subresource (Services' `status.loadBalancer`).
    Status(Vec<Value>),
    /// `kubectl delete <kind>/<name>... -n <ns>`, in one call.
    Delete {
        ns: String,
        objects: Vec<(&'static str, String)>,
    },
    /// Every Service and EndpointSlice of a namespace.
    DeleteAll { ns: String },
}

/// One compared state: what was written to reach it.
#[derive(Clone, Debug)]
pub struct Step {
    pub name: String,
    pub writes: Vec<Write>,
}

/// The marker every step ends with: a Service whose endpoint moves to a new address per step
/// (`10.77.x.y`), so the step is synced on a node once its rules DNAT to that address. Its endpoints
/// carry zone hints: the marker's for the Node's zone, a [`DECOY`] endpoint's for another zone. A
/// proxy that knows the Node's zone label uses the marker alone; one that has not seen the label yet
/// (kube-proxy learns it from a Node watch of its own, apart from Services and EndpointSlices)
/// ignores the hints and uses the decoy too, so "synced" also means "the zone is known" and no step
/// is compared before both proxies apply topology hints alike.
pub const MARKER: &str = "diff-marker";

/// The decoy endpoint's address (never in a settled node's rules).
pub const DECOY: &str = "10.78.0.1";

/// The marker Service (created once, before the first step).
pub fn marker_service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": MARKER, "namespace": "default"},
        "spec": {"ports": [{"port": 80, "protocol": "TCP"}]}})
}

/// The marker's EndpointSlice for step `n` and the endpoint address it carries.
pub fn marker_slice(n: usize) -> (Value, String) {
    let ip = format!("10.77.{}.{}", (n / 250) % 250, n % 250 + 1);
    let endpoint = |addr: &str, zone: &str| {
        json!({"addresses": [addr], "conditions": {"ready": true}, "nodeName": "node-2",
            "hints": {"forZones": [{"name": zone}]}})
    };
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("{MARKER}-1"), "namespace": "default",
            "labels": {"kubernetes.io/service-name": MARKER,
                "endpointslice.kubernetes.io/managed-by": "svcnet-differential"}},
        "addressType": "IPv4",
        "ports": [{"port": 8080, "protocol": "TCP"}],
        "endpoints": [endpoint(&ip, ZONE), endpoint(DECOY, "diff-decoy-zone")]});
    (slice, ip)
}

/// A Service as the API server accepts it from the corpus: allocated fields removed (the API server
/// picks them; the proxies see the same values), status split off for [`Write::Status`].
pub fn adapt_service(mut svc: Value) -> (Value, Option<Value>) {
    let status = svc.as_object_mut().and_then(|o| o.remove("status"));
    if let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) {
        let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
        if !headless {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        spec.remove("healthCheckNodePort");
        if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                p.remove("nodePort");
            }
        }
    }
    let status = status
        .filter(|s| s.pointer("/loadBalancer/ingress").is_some())
        .map(|s| {
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": svc["metadata"]["name"], "namespace": svc["metadata"]["namespace"]},
                "status": s})
        });
    (svc, status)
}

/// An EndpointSlice with the input's own node name replaced by [`NODE`] (so the input's local
/// endpoints are local on the compared nodes).
pub fn adapt_slice(mut slice: Value, input_node: Option<&str>) -> Value {
    if let Some(eps) = slice.get_mut("endpoints").and_then(Value::as_array_mut) {
        for ep in eps.iter_mut() {
            if input_node.is_some() && ep.get("nodeName").and_then(Value::as_str) == input_node {
                ep["nodeName"] = json!(NODE);
            }
        }
    }
    slice
}

/// `namespace/name` of an object (namespace `default` when absent).
pub fn key(obj: &Value) -> (String, String) {
    let ns = obj["metadata"]["namespace"].as_str().unwrap_or("default");
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    (ns.to_string(), name.to_string())
}

/// A Namespace object.
pub fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// The slice with its first endpoint removed, or, when it has one left, that endpoint terminating
/// (serving) instead of ready: an endpoint change every slice can take.
pub fn shrink(slice: &Value) -> Value {
    let mut s = slice.clone();
    if let Some(eps) = s.get_mut("endpoints").and_then(Value::as_array_mut) {
        if eps.len() > 1 {
            eps.remove(0);
        } else if let Some(ep) = eps.first_mut() {
            ep["conditions"] = json!({"ready": false, "serving": true, "terminating": true});
        }
    }
    s
}
