use super::*;
use k8s_openapi::api::core::v1::{NodeSpec, Taint};

fn node(taint: Option<&str>) -> Node {
    Node {
        spec: Some(NodeSpec {
            taints: taint.map(|k| {
                vec![Taint {
                    key: k.into(),
                    effect: "NoSchedule".into(),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn eligibility() {
    assert!(!node_eligible(None));
    assert!(node_eligible(Some(&node(None))));
    assert!(node_eligible(Some(&node(Some("other")))));
    assert!(!node_eligible(Some(&node(Some(TO_BE_DELETED_TAINT)))));
}

#[test]
fn late_queued_update_is_unhealthy_until_synced() {
    let h = Health::new(Duration::from_millis(20), vec![Family::V4]);
    h.set_node(Some(&node(None)));
    h.updated(Family::V4);
    assert!(h.healthy());
    h.queued();
    assert!(h.healthy(), "not late yet");
    std::thread::sleep(Duration::from_millis(30));
    let r = h.report(true);
    assert!(!r.healthy);
    assert_eq!(r.body["healthy"], json!(false));
    assert_eq!(r.body["status"]["IPv4"]["healthy"], json!(false));
    assert_eq!(r.body["nodeEligible"], json!(true));
    h.updated(Family::V4);
    assert!(h.report(true).healthy);
}

#[test]
fn healthz_needs_an_eligible_node_but_livez_does_not() {
    let h = Health::new(Duration::from_secs(60), vec![Family::V4]);
    h.updated(Family::V4);
    let hz = h.report(true);
    assert!(!hz.healthy);
    assert_eq!(hz.body["nodeEligible"], json!(false));
    let lz = h.report(false);
    assert!(lz.healthy);
    assert!(lz.body.get("nodeEligible").is_none());
    assert!(lz.body["currentTime"].as_str().is_some_and(|t| t.ends_with('Z')));
}
