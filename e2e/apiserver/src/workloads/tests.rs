use super::*;
use serde_json::json;

fn deployment(selector: Value, labels: Value) -> Value {
    json!({"spec": {"selector": selector, "template": {"metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
}

#[test]
fn selector_must_be_present_non_empty_and_match_the_template() {
    let ok = deployment(
        json!({"matchLabels": {"app": "web"}}),
        json!({"app": "web", "x": "y"}),
    );
    assert_eq!(admit("Deployment", &ok, None), Vec::<(String, String)>::new());
    let mismatch = deployment(json!({"matchLabels": {"app": "web"}}), json!({"app": "api"}));
    let causes = admit("Deployment", &mismatch, None);
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].0, "spec.template.metadata.labels");
    assert!(
        causes[0]
            .1
            .contains("`selector` does not match template `labels`")
    );
    let empty = deployment(json!({}), json!({"app": "web"}));
    assert!(
        admit("DaemonSet", &empty, None)[0]
            .1
            .contains("empty selector is invalid for daemonset")
    );
    let mut missing = ok.clone();
    missing["spec"].as_object_mut().unwrap().remove("selector");
    assert_eq!(
        admit("Deployment", &missing, None)[0],
        ("spec.selector".into(), "Required value".into())
    );
}

#[test]
fn match_expressions_follow_label_selector_semantics() {
    let labels = json!({"app": "web", "tier": "front"});
    let sel = |op: &str, key: &str, values: Value| json!({"matchExpressions": [{"key": key, "operator": op, "values": values}]});
    assert!(matches(&sel("In", "tier", json!(["front", "back"])), &labels));
    assert!(!matches(&sel("In", "tier", json!(["back"])), &labels));
    assert!(matches(&sel("NotIn", "tier", json!(["back"])), &labels));
    assert!(matches(&sel("NotIn", "zone", json!(["a"])), &labels));
    assert!(matches(&sel("Exists", "app", json!(null)), &labels));
    assert!(!matches(&sel("DoesNotExist", "app", json!(null)), &labels));
    assert!(!matches(&sel("Bogus", "app", json!(null)), &labels));
}

#[test]
fn selector_is_immutable_and_containers_are_required() {
    let old = deployment(json!({"matchLabels": {"app": "web"}}), json!({"app": "web"}));
    let new = deployment(
        json!({"matchLabels": {"app": "web", "v": "2"}}),
        json!({"app": "web", "v": "2"}),
    );
    let causes = admit("Deployment", &new, Some(&old));
    assert_eq!(causes.len(), 1);
    assert!(causes[0].1.ends_with("field is immutable"), "{causes:?}");
    assert_eq!(
        admit("Deployment", &old, Some(&old)),
        Vec::<(String, String)>::new()
    );
    let mut bare = old.clone();
    bare["spec"]["template"]["spec"]["containers"] = json!([]);
    assert_eq!(
        admit("Deployment", &bare, None)[0].0,
        "spec.template.spec.containers"
    );
}
