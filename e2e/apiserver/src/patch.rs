//! Patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902, incl. `test`), and an approximation of
//! strategic merge patch.
//!
//! Strategic merge approximation (documented in the README): maps merge recursively and `null` deletes;
//! lists of objects merge by a key chosen from the field name and the items (`port` for Service ports,
//! `containerPort` for container ports, `type` for conditions/addresses, `key` for taints, `uid` for
//! ownerReferences, `mountPath` for volumeMounts, `name` otherwise when items carry a `name`, except RBAC
//! `subjects`, which upstream replaces); `finalizers` merges as a set; every other list is replaced.
//! Directives honoured: `$patch: delete|replace` (maps and list items), `$deleteFromPrimitiveList/<field>`;
//! `$setElementOrder/<field>` and `$retainKeys` are ignored.

use serde_json::{Map, Value};

use crate::error::ApiError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl PatchType {
    pub fn from_content_type(ct: &str) -> Option<Self> {
        match ct {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/json-patch+json" => Some(Self::Json),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// Parses a patch body: JSON for all types, YAML (a superset) for apply patches.
pub fn parse_body(ptype: PatchType, body: &[u8]) -> Result<Value, ApiError> {
    let parsed = if ptype == PatchType::Apply {
        serde_yaml::from_slice::<Value>(body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice::<Value>(body).map_err(|e| e.to_string())
    };
    parsed.map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

/// RFC 7386.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// RFC 6902; a failed `test` or a bad path is 422 like the real apiserver. As in the apiserver's
/// implementation, `test` with value `null` passes when the path does not exist (kube-rs's finalizer
/// helper relies on this).
pub fn json_patch(target: &mut Value, patch: &Value, kind: &str, name: &str) -> Result<(), ApiError> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| ApiError::bad_request(format!("error decoding json patch: {e}")))?;
    for op in &ops.0 {
        if let json_patch::PatchOperation::Test(t) = op
            && t.value.is_null()
            && target.pointer(t.path.as_str()).is_none_or(Value::is_null)
        {
            continue;
        }
        json_patch::patch(target, std::slice::from_ref(op))
            .map_err(|e| ApiError::invalid("", kind, name, &[("patch".to_string(), e.to_string())]))?;
    }
    Ok(())
}

pub fn strategic_merge(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => merge_maps(t, p),
        _ => *target = strip_directives(patch),
    }
}

fn merge_maps(t: &mut Map<String, Value>, p: &Map<String, Value>) {
    match p.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *t = strip_directives(&Value::Object(p.clone()))
                .as_object()
                .cloned()
                .unwrap_or_default();
            return;
        }
        Some("delete") => {
            t.clear();
            return;
        }
        _ => {}
    }
    for (k, pv) in p {
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(del)) = (t.get_mut(field), pv.as_array()) {
                list.retain(|x| !del.contains(x));
            }
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        match pv {
            Value::Null => {
                t.remove(k);
            }
            Value::Object(pm) => match t.get_mut(k) {
                Some(Value::Object(tm)) => merge_maps(tm, pm),
                _ => {
                    t.insert(k.clone(), strip_directives(pv));
                }
            },
            Value::Array(pl) => {
                let merged = match t.get(k) {
                    Some(Value::Array(tl)) => merge_lists(k, tl, pl),
                    _ => pl
                        .iter()
                        .filter(|i| !is_delete(i))
                        .map(strip_directives)
                        .collect(),
                };
                t.insert(k.clone(), Value::Array(merged));
            }
            _ => {
                t.insert(k.clone(), pv.clone());
            }
        }
    }
}

fn is_delete(v: &Value) -> bool {
    v.get("$patch").and_then(Value::as_str) == Some("delete")
}

/// The merge key for a list field, if it is merged rather than replaced.
fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    let has = |k: &str| items.iter().all(|i| i.get(k).is_some()) && !items.is_empty();
    let candidates: &[&'static str] = match field {
        "ports" => &["port", "containerPort"],
        "conditions" | "addresses" => &["type"],
        "taints" => &["key"],
        "ownerReferences" => &["uid"],
        "volumeMounts" => &["mountPath"],
        // Lists of named items that upstream's types declare atomic (no patchMergeKey): replaced.
        "subjects" => &[],
        _ => &["name"],
    };
    candidates.iter().copied().find(|k| has(k))
}

fn merge_lists(field: &str, target: &[Value], patch: &[Value]) -> Vec<Value> {
    if field == "finalizers" {
        let mut out = target.to_vec();
        for v in patch {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
        return out;
    }
    let objects = |l: &[Value]| l.iter().all(Value::is_object);
    let Some(key) = (objects(target) && objects(patch))
        .then(|| merge_key(field, patch))
        .flatten()
    else {
        return patch.iter().map(strip_directives).collect();
    };
    let mut out = target.to_vec();
    for pi in patch {
        let id = pi.get(key);
        let pos = out.iter().position(|ti| ti.get(key) == id);
        match (pos, is_delete(pi)) {
            (Some(i), true) => {
                out.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => strategic_merge(&mut out[i], pi),
            (None, false) => out.push(strip_directives(pi)),
        }
    }
    out
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(l) => Value::Array(l.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;
