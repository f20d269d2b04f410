//! LIST: selectors, `limit` + `continue` paging, and the list resourceVersion.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resources::ResourceType;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{Inner, Key};

/// Selection shared by list and watch.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub ns: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Filter {
    pub fn from_query(ns: Option<String>, q: &HashMap<String, String>) -> Result<Self, ApiError> {
        Ok(Self {
            ns,
            labels: LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))?,
            fields: FieldSelector::parse(q.get("fieldSelector").map(String::as_str).unwrap_or(""))?,
        })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        self.ns.as_deref().is_none_or(|want| want == ns)
            && self.labels.matches(obj)
            && self.fields.matches(obj)
    }
}

/// The object as served for `rt` (CRD versions share storage; no conversion beyond apiVersion).
pub fn present(rt: &ResourceType, obj: &Value) -> Value {
    crate::convert::to_served(rt, obj)
}

/// Continue tokens are opaque hex of "namespace/name" of the last returned item.
fn encode_continue(k: &Key) -> String {
    format!("{}/{}", k.ns, k.name)
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decode_continue(t: &str) -> Result<(String, String), ApiError> {
    let bad = || ApiError::bad_request("continue key is not valid");
    let bytes: Result<Vec<u8>, _> = (0..t.len())
        .step_by(2)
        .map(|i| {
            t.get(i..i + 2)
                .ok_or(())
                .and_then(|h| u8::from_str_radix(h, 16).map_err(|_| ()))
        })
        .collect();
    let s = String::from_utf8(bytes.map_err(|_| bad())?).map_err(|_| bad())?;
    let (ns, name) = s.split_once('/').ok_or_else(bad)?;
    Ok((ns.to_string(), name.to_string()))
}

/// Matching objects in key order, after the continue position, at most `limit` (then a continue token).
pub fn list(
    inner: &Inner,
    rt: &ResourceType,
    filter: &Filter,
    q: &HashMap<String, String>,
) -> Result<(Vec<Value>, Value), ApiError> {
    let limit = q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let after = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => Some(decode_continue(c)?),
        None => None,
    };
    let storage = rt.storage();
    let start = Key {
        storage: storage.clone(),
        ns: String::new(),
        name: String::new(),
    };
    let mut items = Vec::new();
    let mut last_key = None;
    let mut remaining = 0usize;
    for (k, obj) in inner
        .objects
        .range(start..)
        .take_while(|(k, _)| k.storage == storage)
    {
        if let Some((ans, aname)) = &after
            && (k.ns.as_str(), k.name.as_str()) <= (ans.as_str(), aname.as_str())
        {
            continue;
        }
        if !filter.matches(obj) {
            continue;
        }
        if limit.is_some_and(|l| items.len() >= l) {
            remaining += 1;
            continue;
        }
        last_key = Some(k.clone());
        items.push(present(rt, obj));
    }
    let mut meta = json!({"resourceVersion": inner.rv.to_string()});
    if remaining > 0
        && let Some(k) = last_key
    {
        meta["continue"] = json!(encode_continue(&k));
        meta["remainingItemCount"] = json!(remaining);
    }
    Ok((items, meta))
}

pub fn list_object(rt: &ResourceType, items: Vec<Value>, meta: Value) -> Value {
    json!({
        "kind": format!("{}List", rt.kind),
        "apiVersion": rt.api_version(),
        "metadata": meta,
        "items": items,
    })
}
