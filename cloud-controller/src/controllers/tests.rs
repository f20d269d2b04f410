use std::time::Duration;

use k8s_openapi::api::core::v1::Node;

use super::node_watch::{lb_fingerprint, node_fingerprint, route_fingerprint};
use super::{Tuning, error_delay};
use crate::testutil::node;

#[test]
fn error_delay_doubles_up_to_the_cap() {
    let t = Tuning {
        error_base: Duration::from_secs(1),
        error_max: Duration::from_secs(10),
        ..Tuning::default()
    };
    let delays: Vec<u64> = (1..=6).map(|n| error_delay(&t, n).as_secs()).collect();
    assert_eq!(delays, [1, 2, 4, 8, 10, 10]);
    assert_eq!(error_delay(&t, 1000), Duration::from_secs(10));
}

fn ready(mut n: Node, ready: bool) -> Node {
    if let Some(c) = n.status.as_mut().and_then(|s| s.conditions.as_mut()) {
        c[0].status = if ready { "True" } else { "False" }.into();
    }
    n
}

#[test]
fn fingerprints_ignore_heartbeats_but_see_membership_and_cidrs() {
    let a = vec![node("n1", "z-a"), node("n2", "z-a")];
    let mut b = a.clone();
    // A heartbeat-like change (readiness) leaves pool membership and routes alone...
    b[1] = ready(b[1].clone(), false);
    assert_eq!(lb_fingerprint(&a), lb_fingerprint(&b));
    assert_eq!(route_fingerprint(&a), route_fingerprint(&b));
    // ...but wakes the node lifecycle check.
    assert_ne!(node_fingerprint(&a), node_fingerprint(&b));

    let mut c = a.clone();
    c[0].spec.as_mut().expect("spec").pod_cidr = Some("10.64.1.0/24".into());
    assert_ne!(route_fingerprint(&a), route_fingerprint(&c));
    assert_eq!(lb_fingerprint(&a), lb_fingerprint(&c));

    let mut d = a.clone();
    d.push(node("n3", "z-b"));
    assert_ne!(lb_fingerprint(&a), lb_fingerprint(&d));
    d[2].metadata.labels = Some(
        [(
            "node.kubernetes.io/exclude-from-external-load-balancers".to_owned(),
            "true".to_owned(),
        )]
        .into(),
    );
    assert_eq!(
        lb_fingerprint(&a),
        lb_fingerprint(&d),
        "excluded node is not a member"
    );
}
