//! Helpers shared by the integration tests: locating the committed manifests and walking
//! OpenAPI v3 schemas held as serde_json values.
#![allow(dead_code)] // each test crate uses a different subset

use std::path::PathBuf;

use serde_json::Value;

/// `manifests/crds` of this repository.
pub fn committed_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../manifests/crds")
}

pub const CLB_FILE: &str = "cloudloadbalancers.svcnet.dev.yaml";

/// The committed CloudLoadBalancer CRD parsed as plain JSON values (not into k8s-openapi types,
/// which would silently drop keys Kubernetes may reject).
pub fn committed_clb_crd() -> Value {
    let path = committed_dir().join(CLB_FILE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// spec.versions[0].schema.openAPIV3Schema of a CRD value.
pub fn root_schema(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
}

/// Follows a printer-column style JSONPath (`.status.a.b`, `[?(...)]` filters step into array
/// items) through a schema; None when a segment has no schema.
pub fn schema_at<'a>(root: &'a Value, json_path: &str) -> Option<&'a Value> {
    let mut node = root;
    let mut rest = json_path.strip_prefix('.')?;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            node = node.get("items")?;
            rest = after[end + 1..].strip_prefix('.').unwrap_or(&after[end + 1..]);
            continue;
        }
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        node = node.get("properties")?.get(&rest[..end])?;
        rest = rest[end..].strip_prefix('.').unwrap_or(&rest[end..]);
    }
    Some(node)
}
