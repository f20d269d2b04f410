//! "Everything the manifest says is in what the server returns": the rendered object must be contained in
//! the served one. Containment (not equality) because a server may add fields (uid, defaults, the
//! last-applied annotation) but must not drop or change any it was given.

use serde_json::Value;

/// The first path at which `want` is not contained in `got`, or None when it is. Maps: every key of
/// `want` is in `got` and contained; lists: same length, item by item; scalars: equal.
pub fn first_difference(want: &Value, got: &Value, path: &str) -> Option<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => w.iter().find_map(|(k, wv)| match g.get(k) {
            Some(gv) => first_difference(wv, gv, &format!("{path}.{k}")),
            None => Some(format!("{path}.{k}: missing")),
        }),
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => w
            .iter()
            .zip(g)
            .enumerate()
            .find_map(|(i, (wv, gv))| first_difference(wv, gv, &format!("{path}[{i}]"))),
        _ if want == got => None,
        _ => Some(format!("{path}: want {want}, got {got}")),
    }
}
