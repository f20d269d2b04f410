use serde_json::json;

use super::Checker;

#[test]
fn a_new_member_takes_its_first_probe_then_needs_the_thresholds_to_flip() {
    let hc = json!({"name": "k8s-x-node", "healthyThreshold": 1, "unhealthyThreshold": 3});
    let mut c = Checker::default();
    assert!(c.observe("10.128.0.2", &hc, true), "first probe decides");
    assert!(c.observe("10.128.0.2", &hc, false), "one failure is not enough");
    assert!(c.observe("10.128.0.2", &hc, false));
    assert!(c.observe("10.128.0.2", &hc, true), "a pass resets the count");
    assert!(c.observe("10.128.0.2", &hc, false));
    assert!(c.observe("10.128.0.2", &hc, false));
    assert!(!c.observe("10.128.0.2", &hc, false), "third consecutive failure");
    assert!(c.observe("10.128.0.2", &hc, true), "healthyThreshold 1");
}

#[test]
fn thresholds_default_to_two_and_members_are_per_check() {
    let a = json!({"name": "a"});
    let b = json!({"name": "b"});
    let mut c = Checker::default();
    assert!(!c.observe("10.128.0.3", &a, false));
    assert!(c.observe("10.128.0.3", &b, true), "another check, another member");
    assert!(!c.observe("10.128.0.3", &a, true));
    assert!(c.observe("10.128.0.3", &a, true), "two passes");
}

#[test]
fn forgotten_members_start_over() {
    let hc = json!({"name": "a", "unhealthyThreshold": 5});
    let mut c = Checker::default();
    assert!(c.observe("10.128.0.4", &hc, true));
    c.retain(&[]);
    assert!(!c.observe("10.128.0.4", &hc, false), "first probe decides again");
}
