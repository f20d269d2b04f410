use super::*;
use serde_json::json;

#[test]
fn selects_fields_indexes_and_filters() {
    let o = json!({"spec": {"n": 3, "l": [{"a": 1}, {"a": 2}]},
                   "status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}});
    assert_eq!(eval(&o, ".spec.n"), vec![&json!(3)]);
    assert_eq!(eval(&o, ".spec.l[1].a"), vec![&json!(2)]);
    assert_eq!(eval(&o, ".spec.l[*].a").len(), 2);
    assert_eq!(
        eval(&o, ".status.conditions[?(@.type==\"Ready\")].status"),
        vec![&json!("True")]
    );
    assert!(eval(&o, ".spec.missing").is_empty());
}
