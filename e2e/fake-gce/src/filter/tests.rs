use serde_json::json;

use super::Filter;

fn names(f: &str) -> Vec<&'static str> {
    let items = [
        json!({"name": "k8s-fw-a1", "network": "default", "priority": 1000, "targetTags": ["n1", "n2"]}),
        json!({"name": "k8s-fw-b2", "network": "other", "priority": 900}),
        json!({"name": "allow-ssh", "network": "default", "priority": 1000}),
    ];
    let filter = Filter::parse(f).expect("parses");
    let all = ["k8s-fw-a1", "k8s-fw-b2", "allow-ssh"];
    items
        .iter()
        .zip(all)
        .filter(|(v, _)| filter.matches(v))
        .map(|(_, n)| n)
        .collect()
}

#[test]
fn eq_is_a_full_match_regex() {
    assert_eq!(names("name eq k8s-fw-.*"), ["k8s-fw-a1", "k8s-fw-b2"]);
    assert_eq!(names("name eq k8s-fw"), Vec::<&str>::new());
    assert_eq!(names("name eq allow-ssh"), ["allow-ssh"]);
    assert_eq!(names("name ne k8s-fw-.*"), ["allow-ssh"]);
}

#[test]
fn gcloud_rewrite_and_conjunctions() {
    assert_eq!(names(r#"(name eq ".*(^k8s-fw).*")"#), ["k8s-fw-a1", "k8s-fw-b2"]);
    assert_eq!(names("(name eq k8s-.*) (network eq default)"), ["k8s-fw-a1"]);
    assert_eq!(names("(name eq k8s-.*) AND (priority eq 900)"), ["k8s-fw-b2"]);
    assert_eq!(names("(targetTags eq n2)"), ["k8s-fw-a1"]);
}

#[test]
fn new_syntax() {
    assert_eq!(names(r#"name = "allow-ssh""#), ["allow-ssh"]);
    assert_eq!(names(r#"name = "k8s-*" AND network != "other""#), ["k8s-fw-a1"]);
    assert_eq!(names("name:fw-b"), ["k8s-fw-b2"]);
}

#[test]
fn rejects_garbage() {
    assert!(Filter::parse("(name eq x").is_err());
    assert!(Filter::parse("name lt 3").is_err());
    assert!(Filter::parse("name eq (").is_err());
}

#[test]
fn upstream_route_listing_filter_with_urls() {
    // cloud-provider-gcp lists routes with "(network eq <selfLink>) (name eq <prefix>-.*)".
    let net = "http://127.0.0.1:4000/compute/v1/projects/p/global/networks/default";
    let f = Filter::parse(&format!("(network eq {net}) (name eq kubernetes-.*)")).expect("parses");
    assert!(f.matches(&json!({"name": "kubernetes-a1b2", "network": net})));
    assert!(!f.matches(&json!({"name": "kubernetes-a1b2", "network": format!("{net}2")})));
    assert!(!f.matches(&json!({"name": "other", "network": net})));
}
