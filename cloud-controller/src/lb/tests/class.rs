//! Which Services this controller serves, and how a plan maps to events.

use crate::lb::{LEGACY_EXTERNAL_LB_CLASS, wants_load_balancer};
use crate::testutil::{MiniGce, Scenario};

#[test]
fn only_external_load_balancers_without_foreign_class() {
    let s = Scenario::new();
    assert!(wants_load_balancer(&s.service));

    let mut cluster_ip = s.clone();
    cluster_ip.service.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
    assert!(!wants_load_balancer(&cluster_ip.service));

    let mut foreign = s.clone();
    foreign.service.spec.as_mut().unwrap().load_balancer_class = Some("example.com/other".into());
    assert!(!wants_load_balancer(&foreign.service));

    let mut legacy = s.clone();
    legacy.service.spec.as_mut().unwrap().load_balancer_class = Some(LEGACY_EXTERNAL_LB_CLASS.into());
    assert!(wants_load_balancer(&legacy.service));

    let internal = s
        .clone()
        .annotation("networking.gke.io/load-balancer-type", "Internal");
    assert!(!wants_load_balancer(&internal.service));
}

#[test]
fn node_churn_is_an_update_not_an_ensure() {
    let s = Scenario::new();
    let mut gce = MiniGce::default();
    gce.converge(&s, 3).unwrap();
    let grown = s.clone().add_node("node-9", "us-central1-f");
    let plan = grown.ensure(&gce.observed(&grown.names(), None)).unwrap();
    assert!(plan.only_membership_changes());
    let ported = s.ports("TCP", &[8080]);
    let plan = ported.ensure(&gce.observed(&ported.names(), None)).unwrap();
    assert!(!plan.only_membership_changes());
    assert_eq!(plan.ingress_ip.as_deref(), Some("203.0.113.1"));
}
