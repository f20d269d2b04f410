use super::*;
use serde_json::json;

fn obj(labels: Value) -> Value {
    json!({"metadata": {"name": "a", "namespace": "ns1", "labels": labels}, "spec": {"type": "NodePort"}})
}

#[test]
fn set_based_and_equality() {
    let o = obj(json!({"app": "web", "tier": "front"}));
    let yes = [
        "app=web",
        "app==web",
        "tier!=back",
        "app in (web, db)",
        "app notin (db)",
        "tier",
        "!missing",
        "app=web,tier in (front)",
        "missing notin (x)",
    ];
    for s in yes {
        assert!(LabelSelector::parse(s).unwrap().matches(&o), "{s} should match");
    }
    let no = [
        "app=db",
        "app in (db)",
        "app notin (web)",
        "!app",
        "missing",
        "app=web,tier=back",
    ];
    for s in no {
        assert!(
            !LabelSelector::parse(s).unwrap().matches(&o),
            "{s} should not match"
        );
    }
    assert!(LabelSelector::parse("app in web").is_err());
}

#[test]
fn field_paths() {
    let o = obj(json!({}));
    assert!(
        FieldSelector::parse("metadata.name=a,metadata.namespace=ns1")
            .unwrap()
            .matches(&o)
    );
    assert!(!FieldSelector::parse("metadata.name!=a").unwrap().matches(&o));
    assert!(FieldSelector::parse("spec.type=NodePort").unwrap().matches(&o));
    assert!(FieldSelector::parse("spec.nodeName=").unwrap().matches(&o));
}
