//! The committed CloudLoadBalancer CRD is something a Kubernetes API server accepts: the right
//! kind and names, the status subresource, printer columns that point at real status fields, and
//! a structural schema (Kubernetes rejects CRDs whose schema is not structural).

mod common;

use serde_json::Value;

const ALLOWED_TYPES: [&str; 6] = ["object", "array", "string", "integer", "number", "boolean"];

/// Keywords apiextensions v1 forbids in CRD schemas, or that a structural schema may only use in
/// restricted ways. svcnet generates none of the junctors, so any of them is an error here.
const FORBIDDEN_KEYS: [&str; 12] = [
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "$ref",
    "$schema",
    "definitions",
    "$defs",
    "additionalItems",
    "patternProperties",
    "dependencies",
    "const",
];

#[test]
fn is_a_namespaced_v1_crd_with_the_agreed_names() {
    let crd = common::committed_clb_crd();
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(crd["kind"], "CustomResourceDefinition");
    assert_eq!(crd["metadata"]["name"], "cloudloadbalancers.svcnet.dev");
    let spec = &crd["spec"];
    assert_eq!(spec["group"], "svcnet.dev");
    assert_eq!(spec["scope"], "Namespaced");
    assert_eq!(spec["names"]["kind"], "CloudLoadBalancer");
    assert_eq!(spec["names"]["plural"], "cloudloadbalancers");
    assert_eq!(spec["names"]["singular"], "cloudloadbalancer");
    assert_eq!(spec["names"]["shortNames"], serde_json::json!(["clb"]));

    let versions = spec["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0]["name"], "v1alpha1");
    assert_eq!(versions[0]["served"], true);
    assert_eq!(versions[0]["storage"], true);
    assert_eq!(versions[0]["subresources"]["status"], serde_json::json!({}));
}

#[test]
fn printer_columns_answer_what_gce_got() {
    let crd = common::committed_clb_crd();
    let version = &crd["spec"]["versions"][0];
    let columns = version["additionalPrinterColumns"].as_array().unwrap();
    let default_columns: Vec<(&str, &str, &str)> = columns
        .iter()
        .filter(|c| c["priority"].as_i64().unwrap_or(0) == 0)
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
                c["jsonPath"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        default_columns,
        [
            ("IP", "string", ".status.ingressIP"),
            ("PORTS", "string", ".status.portsSummary"),
            ("NODES", "integer", ".status.nodeCount"),
            (
                "READY",
                "string",
                r#".status.conditions[?(@.type=="Ready")].status"#
            ),
            ("AGE", "date", ".metadata.creationTimestamp"),
        ]
    );

    // Every column under .status must resolve to a schema field of the column's type, or
    // kubectl prints an empty column forever.
    let root = common::root_schema(&crd);
    for column in columns {
        let path = column["jsonPath"].as_str().unwrap();
        assert!(path.starts_with('.'), "jsonPath {path} must start with '.'");
        if path.starts_with(".metadata.") {
            continue;
        }
        let field = common::schema_at(root, path).unwrap_or_else(|| panic!("{path} is not in the schema"));
        assert_eq!(field["type"], column["type"], "type of {path}");
    }
}

#[test]
fn schema_is_structural() {
    let crd = common::committed_clb_crd();
    let root = common::root_schema(&crd);
    assert_eq!(root["type"], "object");
    let mut errors = Vec::new();
    check_node(root, "openAPIV3Schema", &mut errors);
    assert!(
        errors.is_empty(),
        "schema is not structural:\n{}",
        errors.join("\n")
    );
    // The walk must have reached the deepest fields, or it proves nothing.
    assert!(common::schema_at(root, ".status.gce.targetPool.instances").is_some());
}

#[test]
fn structural_check_rejects_what_kubernetes_rejects() {
    let bad = serde_json::json!({
        "type": "object",
        "properties": {
            "a": { "type": ["string", "null"] },
            "b": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
            "c": { "description": "no type" },
            "d": { "type": "array", "items": { "type": "object", "properties": {} },
                   "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"] },
            "e": { "type": "array", "uniqueItems": true, "items": { "type": "string" } }
        }
    });
    let mut errors = Vec::new();
    check_node(&bad, "bad", &mut errors);
    for field in ["bad.a", "bad.b", "bad.c", "bad.d", "bad.e"] {
        assert!(
            errors.iter().any(|e| e.starts_with(&format!("{field}:"))),
            "{field} not reported: {errors:?}"
        );
    }
}

/// Checks one schema node and recurses into properties, additionalProperties and items.
fn check_node(node: &Value, at: &str, errors: &mut Vec<String>) {
    let Some(obj) = node.as_object() else {
        errors.push(format!("{at}: schema node is not an object"));
        return;
    };
    let is_escape = |key: &str| obj.get(key) == Some(&Value::Bool(true));
    match obj.get("type") {
        Some(Value::String(t)) if ALLOWED_TYPES.contains(&t.as_str()) => {}
        Some(Value::String(t)) => errors.push(format!("{at}: unknown type {t:?}")),
        Some(other) => errors.push(format!("{at}: type must be one string, got {other}")),
        None if is_escape("x-kubernetes-int-or-string")
            || is_escape("x-kubernetes-preserve-unknown-fields") => {}
        None => errors.push(format!("{at}: no type")),
    }
    for key in FORBIDDEN_KEYS {
        if obj.contains_key(key) {
            errors.push(format!("{at}: uses {key}"));
        }
    }
    if obj.get("uniqueItems") == Some(&Value::Bool(true)) {
        errors.push(format!("{at}: uniqueItems: true is forbidden"));
    }
    if let Some(nullable) = obj.get("nullable")
        && !nullable.is_boolean()
    {
        errors.push(format!("{at}: nullable must be a boolean"));
    }
    if obj.contains_key("properties") && obj.contains_key("additionalProperties") {
        errors.push(format!("{at}: properties and additionalProperties together"));
    }
    check_list_type(obj, at, errors);

    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            check_node(child, &format!("{at}.{name}"), errors);
        }
    }
    if let Some(required) = obj.get("required").and_then(Value::as_array) {
        let props = obj.get("properties").and_then(Value::as_object);
        for name in required.iter().filter_map(Value::as_str) {
            if !props.is_some_and(|p| p.contains_key(name)) {
                errors.push(format!("{at}: required {name} has no schema"));
            }
        }
    }
    match obj.get("additionalProperties") {
        Some(child @ Value::Object(_)) => check_node(child, &format!("{at}.*"), errors),
        Some(Value::Bool(false)) | None => {}
        Some(other) => errors.push(format!("{at}: additionalProperties {other} is not allowed")),
    }
    match obj.get("items") {
        Some(child @ Value::Object(_)) => check_node(child, &format!("{at}[]"), errors),
        Some(_) => errors.push(format!("{at}: items must be a single schema")),
        None if obj.get("type") == Some(&Value::String("array".into())) => {
            errors.push(format!("{at}: array without items"))
        }
        None => {}
    }
}

/// x-kubernetes-list-type map needs object items whose key fields are required (or defaulted).
fn check_list_type(obj: &serde_json::Map<String, Value>, at: &str, errors: &mut Vec<String>) {
    let Some(list_type) = obj.get("x-kubernetes-list-type") else {
        if obj.contains_key("x-kubernetes-list-map-keys") {
            errors.push(format!("{at}: list-map-keys without list-type map"));
        }
        return;
    };
    match list_type.as_str() {
        Some("atomic") | Some("set") => {}
        Some("map") => {
            let items = &obj["items"];
            let keys: Vec<&str> = obj
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|k| k.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if keys.is_empty() {
                errors.push(format!("{at}: list-type map without list-map-keys"));
            }
            let required: Vec<&str> = items["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for key in keys {
                let has_default = items["properties"][key].get("default").is_some();
                if !required.contains(&key) && !has_default {
                    errors.push(format!("{at}: map key {key} is neither required nor defaulted"));
                }
            }
        }
        _ => errors.push(format!("{at}: unknown x-kubernetes-list-type {list_type}")),
    }
}
