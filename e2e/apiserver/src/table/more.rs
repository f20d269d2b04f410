//! kubectl's columns for the apps/v1 workloads, RBAC objects, config maps, secrets and service accounts
//! (upstream's internal printers). No controller fills workload status here, so READY and friends show
//! whatever status was written (0 when none was).

use serde_json::{Value, json};

use super::{Col, col, key_values, s};
use crate::resources::ResourceType;

fn n(o: &Value, p: &str) -> i64 {
    o.pointer(p).and_then(Value::as_i64).unwrap_or(0)
}

/// `spec.replicas` as the defaulted object would have it (1 when absent).
fn replicas(o: &Value) -> i64 {
    o.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
}

fn count(o: &Value, p: &str) -> i64 {
    match o.pointer(p) {
        Some(Value::Object(m)) => m.len() as i64,
        Some(Value::Array(a)) => a.len() as i64,
        _ => 0,
    }
}

fn joined(o: &Value, list: &str, field: &str) -> Value {
    let items: Vec<&str> = o
        .pointer(list)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|c| c.get(field)?.as_str()).collect())
        .unwrap_or_default();
    json!(items.join(","))
}

fn none_if_empty(parts: Vec<String>) -> Value {
    json!(if parts.is_empty() {
        "<none>".to_string()
    } else {
        parts.join(",")
    })
}

/// metav1.FormatLabelSelector.
fn selector(o: &Value) -> Value {
    let sel = o.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
    let mut parts = key_values(sel.get("matchLabels"));
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = s(e, "/key");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        parts.push(match s(e, "/operator").as_str() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "DoesNotExist" => format!("!{key}"),
            _ => key,
        });
    }
    none_if_empty(parts)
}

fn node_selector(o: &Value) -> Value {
    none_if_empty(key_values(o.pointer("/spec/template/spec/nodeSelector")))
}

/// Binding subjects of one kind, as `kubectl get rolebinding -o wide` lists them.
fn subjects(o: &Value, kind: &str) -> Value {
    let parts: Vec<String> = o
        .get("subjects")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter(|x| x.get("kind").and_then(Value::as_str) == Some(kind))
                .map(|x| match (kind, s(x, "/namespace")) {
                    ("ServiceAccount", ns) => format!("{ns}/{}", s(x, "/name")),
                    _ => s(x, "/name"),
                })
                .collect()
        })
        .unwrap_or_default();
    json!(parts.join(", "))
}

fn containers_and_images() -> [Col; 2] {
    [
        col("Containers", "string", 1, |o| {
            joined(o, "/spec/template/spec/containers", "name")
        }),
        col("Images", "string", 1, |o| {
            joined(o, "/spec/template/spec/containers", "image")
        }),
    ]
}

/// Columns for these kinds, None for the others.
pub(super) fn cols(rt: &ResourceType) -> Option<Vec<Col>> {
    let [containers, images] = containers_and_images();
    let sel = col("Selector", "string", 1, selector);
    Some(match (rt.group.as_str(), rt.plural.as_str()) {
        ("apps", "deployments") => vec![
            col("Ready", "string", 0, |o| {
                json!(format!("{}/{}", n(o, "/status/readyReplicas"), replicas(o)))
            }),
            col("Up-to-date", "integer", 0, |o| {
                json!(n(o, "/status/updatedReplicas"))
            }),
            col("Available", "integer", 0, |o| {
                json!(n(o, "/status/availableReplicas"))
            }),
            containers,
            images,
            sel,
        ],
        ("apps", "daemonsets") => vec![
            col("Desired", "integer", 0, |o| {
                json!(n(o, "/status/desiredNumberScheduled"))
            }),
            col("Current", "integer", 0, |o| {
                json!(n(o, "/status/currentNumberScheduled"))
            }),
            col("Ready", "integer", 0, |o| json!(n(o, "/status/numberReady"))),
            col("Up-to-date", "integer", 0, |o| {
                json!(n(o, "/status/updatedNumberScheduled"))
            }),
            col("Available", "integer", 0, |o| {
                json!(n(o, "/status/numberAvailable"))
            }),
            col("Node Selector", "string", 0, node_selector),
            containers,
            images,
            sel,
        ],
        ("apps", "statefulsets") => vec![
            col("Ready", "string", 0, |o| {
                json!(format!("{}/{}", n(o, "/status/readyReplicas"), replicas(o)))
            }),
            containers,
            images,
        ],
        ("apps", "replicasets") => vec![
            col("Desired", "integer", 0, |o| json!(replicas(o))),
            col("Current", "integer", 0, |o| json!(n(o, "/status/replicas"))),
            col("Ready", "integer", 0, |o| json!(n(o, "/status/readyReplicas"))),
            containers,
            images,
            sel,
        ],
        ("rbac.authorization.k8s.io", "clusterroles" | "roles") => vec![col("Created At", "date", 0, |o| {
            json!(s(o, "/metadata/creationTimestamp"))
        })],
        ("rbac.authorization.k8s.io", "clusterrolebindings" | "rolebindings") => vec![
            col("Role", "string", 0, |o| {
                json!(format!("{}/{}", s(o, "/roleRef/kind"), s(o, "/roleRef/name")))
            }),
            col("Users", "string", 1, |o| subjects(o, "User")),
            col("Groups", "string", 1, |o| subjects(o, "Group")),
            col("ServiceAccounts", "string", 1, |o| subjects(o, "ServiceAccount")),
        ],
        ("", "configmaps") => vec![col("Data", "integer", 0, |o| {
            json!(count(o, "/data") + count(o, "/binaryData"))
        })],
        ("", "secrets") => vec![
            col("Type", "string", 0, |o| json!(s(o, "/type"))),
            col("Data", "integer", 0, |o| json!(count(o, "/data"))),
        ],
        ("", "serviceaccounts") => vec![col("Secrets", "integer", 0, |o| json!(count(o, "/secrets")))],
        _ => return None,
    })
}

/// Kinds upstream prints without an AGE column (their `Created At` stands in for it).
pub(super) fn has_age(rt: &ResourceType) -> bool {
    !rt.is("rbac.authorization.k8s.io", "clusterroles") && !rt.is("rbac.authorization.k8s.io", "roles")
}
