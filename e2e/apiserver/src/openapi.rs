//! A minimal OpenAPI v3 so kubectl's `--validate=strict` (the default) works: kubectl only checks that each
//! group/version document has a PATCH operation for the kind (`x-kubernetes-group-version-kind`) accepting the
//! `fieldValidation` query parameter, then leaves validation to the server. No schemas are published, so kubectl
//! falls back to its compiled-in types for strategic merge patches, and to merge patches for CRDs. OpenAPI v2 is
//! not served (404).

use serde_json::{Map, Value, json};

use crate::resources::Registry;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

pub fn root(reg: &Registry) -> Value {
    let mut paths = Map::new();
    for (g, versions) in reg.groups() {
        for v in versions {
            let p = gv_path(&g, &v);
            // The hash only has to change when the document does; the count of kinds is good enough here.
            let n = reg
                .types
                .iter()
                .filter(|t| t.group == g && t.version == v)
                .count();
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash=svcnet{n}")}),
            );
        }
    }
    json!({"paths": paths})
}

pub fn group_version(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let types: Vec<_> = reg
        .types
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .collect();
    if types.is_empty() {
        return None;
    }
    let base = gv_path(group, version);
    let mut paths = Map::new();
    for t in types {
        let item = if t.namespaced {
            format!("/{base}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
        } else {
            format!("/{base}/{}/{{name}}", t.plural)
        };
        let gvk = json!({"group": t.group, "version": t.version, "kind": t.kind});
        let params = json!([
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        ]);
        let op = |verb: &str| {
            json!({"operationId": format!("{verb}{}", t.kind), "x-kubernetes-action": verb,
                   "x-kubernetes-group-version-kind": gvk, "parameters": params,
                   "responses": {"200": {"description": "OK"}}})
        };
        paths.insert(
            item,
            json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (svcnet-apiserver test double)", "version": "v1.34.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}
