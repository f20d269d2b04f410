//! The API server prunes fields its schema does not know and rejects wrong types. A fully
//! populated CloudLoadBalancer must therefore survive a walk through the CRD schema unchanged,
//! and every schema field must be reachable from the Rust types (no dead schema).
// The fixture helpers below are built from constants; a failing unwrap is a bug in the test.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::CustomResourceExt;
use serde_json::Value;
use svcnet_crds::{
    CloudLoadBalancer, CloudLoadBalancerStatus, ConditionStatus, ConditionType, GceResourceRef, GceResources,
    PortStatus, TargetPoolStatus, new_condition,
};

fn link(kind: &str, name: &str) -> GceResourceRef {
    GceResourceRef {
        name: name.into(),
        self_link: Some(format!(
            "https://compute.googleapis.com/compute/v1/projects/p/regions/r/{kind}/{name}"
        )),
    }
}

/// Every Option set and every list non-empty, so every schema field is exercised.
fn populated() -> CloudLoadBalancer {
    let svc = Service {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("shop".into()),
            uid: Some("0f0e0d0c-0b0a-0908-0706-050403020100".into()),
            ..ObjectMeta::default()
        },
        ..Service::default()
    };
    let mut clb = CloudLoadBalancer::for_service(&svc).unwrap();
    let now = Time(Timestamp::from_second(1_700_000_000).unwrap());
    let mut status = CloudLoadBalancerStatus {
        ingress_ip: Some("203.0.113.10".into()),
        gce: Some(GceResources {
            address: Some(link("addresses", "a0f0e0d0c0b0a0908070605040302010")),
            forwarding_rule: Some(link("forwardingRules", "a0f0e0d0c0b0a0908070605040302010")),
            target_pool: None,
            firewalls: vec![link("firewalls", "k8s-fw-a0f0e0d0c0b0a0908070605040302010")],
            health_checks: vec![link("httpHealthChecks", "k8s-1234-node")],
            load_balancing_scheme: Some("EXTERNAL".into()),
            // An external LB has none; set here so the schema check covers the fields.
            backend_service: Some(link("backendServices", "a0f0e0d0c0b0a0908070605040302010")),
            instance_groups: vec![link("instanceGroups", "k8s-ig--1234")],
        }),
        observed_generation: Some(2),
        last_sync_time: Some(now.clone()),
        last_error: Some("googleapi: Error 403: Quota exceeded".into()),
        ..CloudLoadBalancerStatus::default()
    };
    status.set_ports(vec![PortStatus::new(80, "TCP"), PortStatus::new(53, "UDP")]);
    status.set_target_pool(Some(TargetPoolStatus {
        name: "a0f0e0d0c0b0a0908070605040302010".into(),
        self_link: Some(
            "https://compute.googleapis.com/compute/v1/projects/p/regions/r/targetPools/a0".into(),
        ),
        instances: vec!["https://compute.googleapis.com/compute/v1/projects/p/zones/z/instances/n1".into()],
    }));
    status.set_condition(new_condition(
        ConditionType::Ready,
        ConditionStatus::True,
        "Ensured",
        "load balancer matches the Service",
        Some(2),
        now,
    ));
    clb.status = Some(status);
    clb
}

fn schema() -> Value {
    let crd = serde_json::to_value(CloudLoadBalancer::crd()).unwrap();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

/// Validates `value` against `schema` the way pruning and type checks would; records every
/// schema path it visited in `seen`.
fn walk(value: &Value, schema: &Value, at: &str, seen: &mut BTreeSet<String>, errors: &mut Vec<String>) {
    seen.insert(at.to_owned());
    let expected = schema["type"].as_str().unwrap_or("");
    let ok = match value {
        Value::Null => schema["nullable"] == Value::Bool(true),
        Value::Bool(_) => expected == "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => expected == "integer" || expected == "number",
        Value::Number(_) => expected == "number",
        Value::String(_) => expected == "string",
        Value::Array(_) => expected == "array",
        Value::Object(_) => expected == "object",
    };
    if !ok {
        errors.push(format!(
            "{at}: value {value} does not match schema type {expected:?}"
        ));
        return;
    }
    match value {
        Value::Object(fields) => {
            for (key, child) in fields {
                match schema["properties"].get(key) {
                    Some(child_schema) => walk(child, child_schema, &format!("{at}.{key}"), seen, errors),
                    None => errors.push(format!(
                        "{at}.{key}: not in the schema, the API server would prune it"
                    )),
                }
            }
            for key in schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !fields.contains_key(key) {
                    errors.push(format!("{at}.{key}: required by the schema but not serialized"));
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, &schema["items"], &format!("{at}[]"), seen, errors);
            }
        }
        _ => {}
    }
}

fn schema_paths(schema: &Value, at: &str, out: &mut BTreeSet<String>) {
    out.insert(at.to_owned());
    if let Some(props) = schema["properties"].as_object() {
        for (key, child) in props {
            schema_paths(child, &format!("{at}.{key}"), out);
        }
    }
    if schema.get("items").is_some() {
        schema_paths(&schema["items"], &format!("{at}[]"), out);
    }
}

/// The object without the fields the API server owns (apiVersion, kind, metadata are not part
/// of a CRD schema).
fn body(clb: &CloudLoadBalancer) -> Value {
    let mut json = serde_json::to_value(clb).unwrap();
    if let Some(obj) = json.as_object_mut() {
        for key in ["apiVersion", "kind", "metadata"] {
            obj.remove(key);
        }
    }
    json
}

#[test]
fn populated_object_fits_the_schema_and_covers_it() {
    let schema = schema();
    let mut seen = BTreeSet::new();
    let mut errors = Vec::new();
    walk(&body(&populated()), &schema, "", &mut seen, &mut errors);
    assert!(
        errors.is_empty(),
        "object does not fit the CRD schema:\n{}",
        errors.join("\n")
    );

    let mut all = BTreeSet::new();
    schema_paths(&schema, "", &mut all);
    let unvisited: Vec<_> = all.difference(&seen).collect();
    assert!(
        unvisited.is_empty(),
        "schema fields the populated fixture never sets (extend populated()): {unvisited:?}"
    );
}

#[test]
fn walk_catches_pruned_and_mistyped_fields() {
    let schema = schema();
    let mut json = body(&populated());
    json["status"]["bogus"] = Value::from(1);
    json["status"]["nodeCount"] = Value::from("three");
    let mut errors = Vec::new();
    walk(&json, &schema, "", &mut BTreeSet::new(), &mut errors);
    assert!(
        errors.iter().any(|e| e.starts_with(".status.bogus:")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.starts_with(".status.nodeCount:")),
        "{errors:?}"
    );
}

#[test]
fn minimal_object_from_for_service_fits_the_schema() {
    let mut clb = populated();
    clb.status = None;
    let mut errors = Vec::new();
    walk(&body(&clb), &schema(), "", &mut BTreeSet::new(), &mut errors);
    assert!(errors.is_empty(), "{errors:?}");
}
