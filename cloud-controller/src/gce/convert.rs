//! Plain mirrors <-> google-cloud-compute-v1 models. Both speak the REST JSON field names, so the
//! conversion goes through serde_json: no hand-written field mapping to drift. Empty strings and
//! empty lists are dropped on the way out, so an unset field in a mirror means "let GCE default
//! it" rather than an invalid empty enum value.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::gce::error::GceError;

/// Mirror (or any serialisable value) -> client model.
pub(crate) fn to_model<M: DeserializeOwned>(what: &str, mirror: &impl Serialize) -> Result<M, GceError> {
    let mut v = serde_json::to_value(mirror).map_err(|e| GceError::new(what, format!("encoding: {e}")))?;
    prune(&mut v);
    serde_json::from_value(v).map_err(|e| GceError::new(what, format!("converting to the client model: {e}")))
}

/// Client model -> mirror (mirrors default every missing field).
pub(crate) fn from_model<T: DeserializeOwned>(what: &str, model: &impl Serialize) -> Result<T, GceError> {
    let v = serde_json::to_value(model).map_err(|e| GceError::new(what, format!("encoding: {e}")))?;
    serde_json::from_value(v)
        .map_err(|e| GceError::new(what, format!("converting from the client model: {e}")))
}

/// Any model as JSON (for selfLinks and fields the mirrors do not carry).
pub(crate) fn to_json(model: &impl Serialize) -> Value {
    serde_json::to_value(model).unwrap_or(Value::Null)
}

/// Removes empty strings, empty arrays and nulls, recursively.
pub(crate) fn prune(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for child in map.values_mut() {
                prune(child);
            }
            map.retain(|_, child| !is_empty(child));
        }
        Value::Array(items) => {
            for child in items.iter_mut() {
                prune(child);
            }
        }
        _ => {}
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
