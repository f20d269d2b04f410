//! The write verbs with the metadata rules of the real apiserver: uid, creationTimestamp, generateName,
//! generation (custom resources, CRDs, pods: bumped on non-metadata, non-status changes), optimistic concurrency on resourceVersion,
//! status subresource separation, and finalizers (deletionTimestamp, removal when the last one goes).

use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::resources::ResourceType;
use crate::store::{Inner, Key};

mod create;
mod delete;
mod update;

pub use create::create;
pub use delete::delete;
pub use update::{patch, update};

#[derive(Debug, Clone, Default)]
pub struct WriteOpts {
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub force: bool,
    /// `Some("status")` for writes through the status subresource.
    pub subresource: Option<String>,
}

impl WriteOpts {
    fn status_only(&self) -> bool {
        self.subresource.as_deref() == Some("status")
    }
}

pub fn key(rt: &ResourceType, ns: &str, name: &str) -> Key {
    Key {
        storage: rt.storage(),
        ns: if rt.namespaced {
            ns.to_string()
        } else {
            String::new()
        },
        name: name.to_string(),
    }
}

pub(crate) fn meta(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    // Just ensured above; the fallback keeps this free of panics.
    match obj.get_mut("metadata").and_then(Value::as_object_mut) {
        Some(m) => m,
        None => unreachable_meta(),
    }
}

#[allow(clippy::panic)]
fn unreachable_meta() -> ! {
    panic!("metadata was just set to an object")
}

pub(crate) fn str_at<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

pub fn get(inner: &Inner, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
    inner
        .get(&key(rt, ns, name))
        .cloned()
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))
}

pub(crate) fn check_body(rt: &ResourceType, body: &Value) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request was in an unknown format",
        ));
    }
    let kind = str_at(body, "/kind");
    if !kind.is_empty() && kind != rt.kind {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({})",
            str_at(body, "/apiVersion"),
            rt.api_version()
        )));
    }
    Ok(())
}

/// ObjectMeta round-trips through Go structs in the real apiserver, so empty `omitempty` fields vanish.
pub(crate) fn normalize_meta(obj: &mut Value) {
    let m = meta(obj);
    let empty: Vec<String> = m
        .iter()
        .filter(|(_, v)| match v {
            Value::Null => true,
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::String(s) => s.is_empty(),
            _ => false,
        })
        .map(|(k, _)| k.clone())
        .collect();
    for k in empty {
        m.remove(&k);
    }
}
