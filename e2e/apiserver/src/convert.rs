//! The one conversion the real apiserver does between kinds svcnet uses: `events.k8s.io/v1` Events are stored
//! as core `v1` Events (one storage, as upstream), so events written by kube-rs's Recorder show up in
//! `kubectl get events` and `kubectl describe`, and core events are visible through events.k8s.io.

use serde_json::{Map, Value, json};

use crate::resources::ResourceType;

/// (events.k8s.io/v1 field, core/v1 field)
const RENAMES: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn is_events_v1(rt: &ResourceType) -> bool {
    rt.is("events.k8s.io", "events")
}

/// Storage identity shared with another kind, if any.
pub fn shared_storage(group: &str, plural: &str) -> Option<&'static str> {
    (group == "events.k8s.io" && plural == "events").then_some("/events")
}

/// apiVersion objects of this kind are stored under.
pub fn stored_api_version(rt: &ResourceType) -> String {
    if is_events_v1(rt) {
        "v1".into()
    } else {
        rt.api_version()
    }
}

fn rename(obj: Value, to_core: bool) -> Value {
    let Value::Object(m) = obj else { return obj };
    let mut out = Map::new();
    for (k, v) in m {
        let renamed = RENAMES.iter().find_map(|(new, core)| {
            if to_core && k == *new {
                Some(*core)
            } else if !to_core && k == *core {
                Some(*new)
            } else {
                None
            }
        });
        out.insert(renamed.map(String::from).unwrap_or(k), v);
    }
    Value::Object(out)
}

/// A request body for `rt` in the shape it is stored in.
pub fn to_stored(rt: &ResourceType, obj: Value) -> Value {
    if !is_events_v1(rt) {
        return obj;
    }
    let mut o = rename(obj, true);
    o["apiVersion"] = json!("v1");
    o
}

/// A stored object in the shape `rt` serves.
pub fn to_served(rt: &ResourceType, obj: &Value) -> Value {
    let mut o = if is_events_v1(rt) {
        rename(obj.clone(), false)
    } else {
        obj.clone()
    };
    o["apiVersion"] = json!(rt.api_version());
    o["kind"] = json!(rt.kind);
    o
}
