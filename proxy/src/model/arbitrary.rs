//! Random Services and EndpointSlices for the model's property tests: few names so that slices collide
//! (several per Service, the same address in several slices), and bad values of every field the model
//! validates (names, protocols, port numbers, addresses of the wrong family or no address at all).

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use proptest::prelude::*;
use serde_json::{Value, json};

fn pick(xs: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    prop::sample::select(xs)
}

/// Mostly `common`, sometimes one of `rare`: keeps most objects valid and meeting each other.
fn mostly(common: &'static str, rare: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    prop_oneof![3 => Just(common), 1 => pick(rare)]
}

fn opt_bool() -> impl Strategy<Value = Value> {
    prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::Bool)]
}

fn endpoint() -> impl Strategy<Value = Value> {
    (
        pick(&[
            "10.0.0.1",
            "10.0.0.2",
            "10.0.0.10",
            "10.0.0.9",
            "10.0.0.1",
            "10.0.0.2",
            "fd00::1",
            "fd00::a",
            "fd00::1",
            "not-an-ip",
            "",
        ]),
        (opt_bool(), opt_bool(), opt_bool()),
        pick(&["", "n1", "n2"]),
        prop::option::of((
            prop::collection::vec(pick(&["z1", "z2"]), 0..2),
            prop::collection::vec(pick(&["n1", "n2"]), 0..2),
        )),
    )
        .prop_map(|(addr, (ready, serving, terminating), node, hints)| {
            let mut e = json!({
                "addresses": if addr.is_empty() { json!([]) } else { json!([addr]) },
                "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
            });
            if !node.is_empty() {
                e["nodeName"] = json!(node);
            }
            if let Some((zones, nodes)) = hints {
                let z: Vec<Value> = zones.iter().map(|n| json!({"name": n})).collect();
                let n: Vec<Value> = nodes.iter().map(|n| json!({"name": n})).collect();
                e["hints"] = json!({"forZones": z, "forNodes": n});
            }
            e
        })
}

fn slice_port() -> impl Strategy<Value = Value> {
    (
        mostly("", &["http", "Bad_Port"]),
        mostly("TCP", &["UDP", "", "XTP"]),
        prop_oneof![
            1 => Just(Value::Null),
            4 => mostly("80", &["0", "8080", "70000"]).prop_map(|p| json!(p.parse::<i64>().expect("number"))),
        ],
    )
        .prop_map(|(name, proto, port)| {
            let mut p = json!({"port": port});
            if !name.is_empty() {
                p["name"] = json!(name);
            }
            if !proto.is_empty() {
                p["protocol"] = json!(proto);
            }
            p
        })
}

/// One EndpointSlice; names repeat across calls so that slices of one Service meet.
pub(crate) fn slice() -> impl Strategy<Value = EndpointSlice> {
    (
        mostly("default", &["other", "Bad_NS", ""]),
        pick(&["s-a", "s-b", "s-c", "s-d"]),
        mostly("web", &["db", "Bad_Svc", ""]),
        mostly("IPv4", &["IPv6", "FQDN"]),
        prop::collection::vec(slice_port(), 0..3),
        prop::collection::vec(endpoint(), 0..5),
    )
        .prop_map(|(ns, name, svc, at, ports, eps)| {
            let mut meta = json!({"name": name});
            if !ns.is_empty() {
                meta["namespace"] = json!(ns);
            }
            if !svc.is_empty() {
                meta["labels"] = json!({"kubernetes.io/service-name": svc});
            }
            let v = json!({"metadata": meta, "addressType": at, "ports": ports, "endpoints": eps});
            serde_json::from_value(v).expect("generated object is valid JSON for its type")
        })
}

/// One Service: single or dual stack, sometimes with a bad name.
pub(crate) fn service() -> impl Strategy<Value = Service> {
    (
        pick(&["web", "db", "Bad_Svc"]),
        pick(&["default", "other"]),
        pick(&["10.96.0.1", "fd00::96:1", "10.96.0.1,fd00::96:1", "None"]),
        prop::collection::vec((pick(&["", "http", "Bad_Port"]), pick(&["80", "8080"])), 1..3),
    )
        .prop_map(|(name, ns, ips, ports)| {
            let ips: Vec<&str> = ips.split(',').collect();
            let ports: Vec<Value> = ports
                .iter()
                .map(|(n, p)| {
                    let mut v = json!({"port": p.parse::<i64>().expect("number")});
                    if !n.is_empty() {
                        v["name"] = json!(n);
                    }
                    v
                })
                .collect();
            let v = json!({
                "metadata": {"name": name, "namespace": ns},
                "spec": {"clusterIP": ips[0], "clusterIPs": ips, "ports": ports},
            });
            serde_json::from_value(v).expect("generated object is valid JSON for its type")
        })
}
