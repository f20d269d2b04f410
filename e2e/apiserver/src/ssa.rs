//! Server-side apply, approximated: each `Apply` field manager owns the leaf paths of its last applied
//! configuration (lists are atomic leaves), recorded in `metadata.managedFields` as FieldsV1. An apply that
//! would change a value owned by another Apply manager fails with 409 Conflict unless `force=true`; any other
//! write that changes a value takes it away from the Apply owners (as an Update manager would). This is enough
//! for leader election with kube-lease-manager (apply to acquire, strategic patch to renew/release).

use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::patch::strategic_merge;

type Path = Vec<String>;

/// Leaf paths of an applied configuration, skipping identity fields nobody "owns".
fn leaf_paths(v: &Value) -> Vec<Path> {
    let mut out = Vec::new();
    if let Some(m) = v.as_object() {
        for (k, child) in m {
            if k == "apiVersion" || k == "kind" {
                continue;
            }
            if k == "metadata" {
                if let Some(md) = child.as_object() {
                    for (mk, mv) in md {
                        if matches!(mk.as_str(), "labels" | "annotations") {
                            walk(mv, vec!["metadata".into(), mk.clone()], &mut out);
                        } else if mk == "finalizers" {
                            out.push(vec!["metadata".into(), mk.clone()]);
                        }
                    }
                }
                continue;
            }
            walk(child, vec![k.clone()], &mut out);
        }
    }
    out
}

fn walk(v: &Value, prefix: Path, out: &mut Vec<Path>) {
    match v.as_object() {
        Some(m) if !m.is_empty() => {
            for (k, c) in m {
                let mut p = prefix.clone();
                p.push(k.clone());
                walk(c, p, out);
            }
        }
        _ => out.push(prefix),
    }
}

fn at<'a>(v: &'a Value, p: &[String]) -> Option<&'a Value> {
    p.iter()
        .try_fold(v, |cur, seg| cur.get(seg))
        .filter(|x| !x.is_null())
}

fn to_fields(paths: &[Path]) -> Value {
    let mut root = Map::new();
    for p in paths {
        let mut cur = &mut root;
        for seg in p {
            let entry = cur.entry(format!("f:{seg}")).or_insert_with(|| json!({}));
            let Some(next) = entry.as_object_mut() else { break };
            cur = next;
        }
    }
    Value::Object(root)
}

fn from_fields(v: &Value) -> Vec<Path> {
    fn rec(v: &Value, prefix: Path, out: &mut Vec<Path>) {
        match v.as_object() {
            Some(m) if !m.is_empty() => {
                for (k, c) in m {
                    let mut p = prefix.clone();
                    p.push(k.strip_prefix("f:").unwrap_or(k).to_string());
                    rec(c, p, out);
                }
            }
            _ if !prefix.is_empty() => out.push(prefix),
            _ => {}
        }
    }
    let mut out = Vec::new();
    rec(v, Vec::new(), &mut out);
    out
}

fn overlaps(a: &[String], b: &[String]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// (manager, owned paths) for every Apply entry of the object.
fn apply_owners(obj: &Value) -> Vec<(String, Vec<Path>)> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter(|e| e.get("operation").and_then(Value::as_str) == Some("Apply"))
                .map(|e| {
                    let m = e.get("manager").and_then(Value::as_str).unwrap_or("").to_string();
                    (m, e.get("fieldsV1").map(from_fields).unwrap_or_default())
                })
                .collect()
        })
        .unwrap_or_default()
}

fn set_owners(obj: &mut Value, owners: &[(String, Vec<Path>)], api_version: &str) {
    let entries: Vec<Value> = owners
        .iter()
        .filter(|(_, paths)| !paths.is_empty())
        .map(|(m, paths)| {
            json!({"manager": m, "operation": "Apply", "apiVersion": api_version,
                   "time": crate::time::now_rfc3339(), "fieldsType": "FieldsV1", "fieldsV1": to_fields(paths)})
        })
        .collect();
    if let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if entries.is_empty() {
            md.remove("managedFields");
        } else {
            md.insert("managedFields".into(), Value::Array(entries));
        }
    }
}

/// Applies `config` as `manager` onto `current` (None when creating). Returns the merged object with updated
/// ownership, or 409 listing the fields other managers own.
pub fn apply(current: Option<&Value>, config: &Value, manager: &str, force: bool) -> Result<Value, ApiError> {
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("v1")
        .to_string();
    let mine = leaf_paths(config);
    let base = current.cloned().unwrap_or_else(|| json!({}));
    let mut owners = apply_owners(&base);
    let mut conflicts = Vec::new();
    for (other, paths) in owners.iter_mut().filter(|(m, _)| m != manager) {
        for p in &mine {
            let owned = paths.iter().any(|o| overlaps(o, p));
            if owned && at(&base, p) != at(config, p) {
                conflicts.push((other.clone(), p.join(".")));
            }
        }
        if force {
            paths.retain(|o| !mine.iter().any(|p| overlaps(o, p)));
        }
    }
    if !conflicts.is_empty() && !force {
        let name = config
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let list: Vec<String> = conflicts
            .iter()
            .map(|(m, f)| format!("conflict with \"{m}\": .{f}"))
            .collect();
        let mut e = ApiError::apply_conflict(
            name,
            format!(
                "Apply failed with {} conflicts: {}",
                conflicts.len(),
                list.join("; ")
            ),
        );
        if let Some(d) = e.details.as_mut() {
            d["causes"] = Value::Array(
                conflicts
                    .iter()
                    .map(|(m, f)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{m}\""), "field": format!(".{f}")}))
                    .collect(),
            );
        }
        return Err(e);
    }
    let mut merged = base.clone();
    // Fields this manager applied before but dropped now are removed unless someone else owns them.
    let previous: Vec<Path> = owners
        .iter()
        .filter(|(m, _)| m == manager)
        .flat_map(|(_, p)| p.clone())
        .collect();
    for p in previous {
        let still_mine = mine.iter().any(|q| overlaps(q, &p));
        let others = owners
            .iter()
            .any(|(m, ps)| m != manager && ps.iter().any(|o| overlaps(o, &p)));
        if !still_mine && !others {
            remove_path(&mut merged, &p);
        }
    }
    strategic_merge(&mut merged, config);
    owners.retain(|(m, _)| m != manager);
    owners.push((manager.to_string(), mine));
    set_owners(&mut merged, &owners, &api_version);
    Ok(merged)
}

fn remove_path(v: &mut Value, p: &[String]) {
    let Some((last, parent)) = p.split_last() else {
        return;
    };
    let mut cur = v;
    for seg in parent {
        match cur.get_mut(seg) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(m) = cur.as_object_mut() {
        m.remove(last);
    }
}

/// After a non-apply write: Apply managers lose the fields whose values changed. `new` carries the old
/// managedFields (writers cannot edit them directly).
pub fn after_update(old: &Value, new: &mut Value) {
    let mut owners = apply_owners(old);
    if owners.is_empty() {
        return;
    }
    for (_, paths) in owners.iter_mut() {
        paths.retain(|p| at(old, p) == at(new, p));
    }
    let api_version = new
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("v1")
        .to_string();
    set_owners(new, &owners, &api_version);
}

#[cfg(test)]
mod tests;
