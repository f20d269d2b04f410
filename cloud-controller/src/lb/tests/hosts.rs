use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::lb::hosts::{EXCLUDE_LB_LABEL, LbHost, TO_BE_DELETED_TAINT, lb_hosts, node_is_eligible};
use crate::testutil::{node, taint};

fn labelled(value: &str) -> k8s_openapi::api::core::v1::Node {
    let mut n = node("n", "us-central1-a");
    n.metadata.labels = Some([(EXCLUDE_LB_LABEL.to_string(), value.to_string())].into());
    n
}

#[test]
fn exclude_label_follows_go_parse_bool() {
    assert!(!node_is_eligible(&labelled("true")));
    assert!(
        !node_is_eligible(&labelled("")),
        "non-boolean value excludes, as upstream"
    );
    assert!(!node_is_eligible(&labelled("yes")));
    assert!(node_is_eligible(&labelled("false")));
    assert!(node_is_eligible(&labelled("0")));
}

#[test]
fn autoscaler_taint_and_deletion_exclude_but_not_ready_does_not() {
    let mut tainted = node("t", "us-central1-a");
    tainted.spec.as_mut().unwrap().taints = Some(vec![taint(TO_BE_DELETED_TAINT)]);
    assert!(!node_is_eligible(&tainted));

    let mut deleting = node("d", "us-central1-a");
    deleting.metadata.deletion_timestamp = Some(Time(Default::default()));
    assert!(!node_is_eligible(&deleting));

    // stableNodeSetPredicates: readiness and unschedulable are not predicates.
    let mut not_ready = node("r", "us-central1-a");
    not_ready.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
    not_ready.spec.as_mut().unwrap().unschedulable = Some(true);
    assert!(node_is_eligible(&not_ready));
}

#[test]
fn hosts_come_from_provider_id_and_uninitialised_nodes_are_reported() {
    let mut uninit = node("new", "us-central1-b");
    uninit.spec.as_mut().unwrap().provider_id = None;
    let nodes = vec![node("b", "us-central1-b"), node("a", "us-central1-a"), uninit];
    let (hosts, skipped) = lb_hosts(&nodes);
    assert_eq!(
        hosts,
        vec![
            LbHost {
                zone: "us-central1-a".into(),
                instance: "a".into()
            },
            LbHost {
                zone: "us-central1-b".into(),
                instance: "b".into()
            },
        ]
    );
    assert_eq!(skipped, vec!["new".to_string()]);
}
