//! The state dump (`GET /_fake/state`) and the `--state-file` snapshot share one JSON shape:
//! one list per collection, each element exactly the GCE resource (same field names as the API).
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::app::{App, Inner};
use crate::kind::Kind;
use crate::operations::Operation;
use crate::scope::Scope;
use crate::store::{Data, key};

pub fn snapshot(app: &App, inner: &Inner) -> Value {
    let mut out = Map::new();
    out.insert("baseUrl".into(), json!(app.urls.base));
    out.insert("project".into(), json!(app.cfg.project));
    out.insert("region".into(), json!(app.cfg.region));
    out.insert("zones".into(), json!(app.cfg.zones));
    for kind in Kind::ALL {
        let items: Vec<&Value> = inner.data.resources.iter(kind).map(|(_, v)| v).collect();
        out.insert(kind.state_key().into(), json!(items));
    }
    let ops: Vec<&Operation> = inner.data.operations.values().collect();
    out.insert("operations".into(), json!(ops));
    out.insert("nextId".into(), json!(inner.data.next_id));
    Value::Object(out)
}

/// Writes atomically (temp file + rename) so a reader never sees half a file.
pub fn save(file: &Path, snap: &Value) -> Result<(), String> {
    let tmp = file.with_extension("tmp");
    let bytes = serde_json::to_vec_pretty(snap).map_err(|e| e.to_string())?;
    std::fs::write(&tmp, bytes).map_err(|e| format!("write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, file).map_err(|e| format!("rename to {}: {e}", file.display()))?;
    Ok(())
}

/// Reads a snapshot written by `save` (or a hand-written file of the same shape). Links written
/// under another base URL (e.g. an earlier random port) are rewritten to `base`.
pub fn load(file: &Path, base: &str) -> Result<Data, String> {
    let mut raw = std::fs::read_to_string(file).map_err(|e| format!("read: {e}"))?;
    let first: Value = serde_json::from_str(&raw).map_err(|e| format!("parse: {e}"))?;
    if let Some(old) = first["baseUrl"]
        .as_str()
        .filter(|old| *old != base && !old.is_empty())
    {
        raw = raw.replace(old, base);
    }
    let v: Value = serde_json::from_str(&raw).map_err(|e| format!("parse: {e}"))?;
    let mut data = Data::default();
    for kind in Kind::ALL {
        for item in v[kind.state_key()].as_array().into_iter().flatten() {
            let name = item["name"].as_str().ok_or("a resource without name")?;
            let scope = scope_of(item);
            data.resources
                .map_mut(kind)
                .insert(key(&scope, name), item.clone());
        }
    }
    let ops: Vec<Operation> = serde_json::from_value(v["operations"].clone()).unwrap_or_default();
    data.operations = ops
        .into_iter()
        .map(|o| (o.name.clone(), o))
        .collect::<BTreeMap<_, _>>();
    data.next_id = v["nextId"].as_u64().unwrap_or(0);
    Ok(data)
}

fn scope_of(item: &Value) -> Scope {
    let last = |f: &str| {
        item[f]
            .as_str()
            .and_then(|u| u.rsplit('/').next())
            .map(str::to_string)
    };
    if let Some(z) = last("zone") {
        Scope::Zone(z)
    } else if let Some(r) = last("region") {
        Scope::Region(r)
    } else {
        Scope::Global
    }
}
