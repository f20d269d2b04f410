//! The part of upstream's apps/v1 validation that a manifest can get wrong without any schema noticing:
//! a required, non-empty `spec.selector` that matches the pod template's labels, at least one container,
//! and (apps/v1) a selector that never changes after creation. Everything else about workloads is
//! stored as sent: no defaulting, no pod-spec validation, no controller.

use serde_json::Value;

/// (field, message) causes of a 422, empty when the object is acceptable.
pub fn admit(kind: &str, new: &Value, old: Option<&Value>) -> Vec<(String, String)> {
    let mut causes = Vec::new();
    let selector = new.pointer("/spec/selector");
    match selector {
        None | Some(Value::Null) => causes.push(("spec.selector".into(), "Required value".into())),
        Some(sel) if is_empty(sel) => causes.push((
            "spec.selector".into(),
            format!(
                "Invalid value: {sel}: empty selector is invalid for {}",
                kind.to_ascii_lowercase()
            ),
        )),
        Some(sel) => {
            let labels = new
                .pointer("/spec/template/metadata/labels")
                .cloned()
                .unwrap_or(Value::Null);
            if !matches(sel, &labels) {
                causes.push((
                    "spec.template.metadata.labels".into(),
                    format!("Invalid value: {labels}: `selector` does not match template `labels`"),
                ));
            }
        }
    }
    if let (Some(old_sel), Some(new_sel)) = (old.and_then(|o| o.pointer("/spec/selector")), selector)
        && old_sel != new_sel
    {
        causes.push((
            "spec.selector".into(),
            format!("Invalid value: {new_sel}: field is immutable"),
        ));
    }
    let no_containers = new
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_containers {
        causes.push(("spec.template.spec.containers".into(), "Required value".into()));
    }
    causes
}

fn is_empty(sel: &Value) -> bool {
    let none = |k: &str| match sel.get(k) {
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => true,
    };
    none("matchLabels") && none("matchExpressions")
}

/// metav1.LabelSelector semantics: every matchLabels pair and every expression must hold.
pub fn matches(sel: &Value, labels: &Value) -> bool {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let pairs_hold = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|m| m.iter().all(|(k, v)| label(k) == v.as_str()));
    let exprs_hold = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .is_none_or(|es| {
            es.iter().all(|e| {
                let key = e.get("key").and_then(Value::as_str).unwrap_or("");
                let values: Vec<&str> = e
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                match e.get("operator").and_then(Value::as_str) {
                    Some("In") => label(key).is_some_and(|v| values.contains(&v)),
                    Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
                    Some("Exists") => label(key).is_some(),
                    Some("DoesNotExist") => label(key).is_none(),
                    _ => false,
                }
            })
        });
    pairs_hold && exprs_hold
}

#[cfg(test)]
mod tests;
