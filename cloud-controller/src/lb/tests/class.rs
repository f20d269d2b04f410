//! Which Services this controller serves, and how a plan maps to events.

use crate::lb::external::delete::plan_delete;
use crate::lb::ownership::{LB_CLEANUP_FINALIZER, LEGACY_EXTERNAL_LB_CLASS, wants_load_balancer};
use crate::lb::ownership::{
    NETLB_FINALIZER, OUR_FINALIZERS, Role, finalizers_with_ours, forwarding_rule_is_foreign, role,
};
use crate::objects::ForwardingRule;
use crate::objects::observed::Observed;
use crate::testutil::{MiniGce, Scenario};

fn with_finalizers(mut s: Scenario, finalizers: &[&str]) -> Scenario {
    s.service.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
    s
}

/// Skip conditions as upstream's shouldProcessNetLB / usesL4RBS (providers/gce/gce_util.go).
#[test]
fn backend_service_controllers_keep_their_services() {
    let s = Scenario::new();
    let rbs = s.clone().annotation("cloud.google.com/l4-rbs", "enabled");
    assert!(matches!(role(&rbs.service), Role::Foreign(_)));
    // Upstream compares the value exactly: anything else is not the RBS opt-in.
    let other_value = s.clone().annotation("cloud.google.com/l4-rbs", "Enabled");
    assert_eq!(role(&other_value.service), Role::Ours);
    for f in [
        "gke.networking.io/l4-netlb-v2",
        "gke.networking.io/l4-netlb-v3",
        "gke.networking.io/l4-ilb-v2",
    ] {
        let theirs = with_finalizers(s.clone(), &[f]);
        assert!(matches!(role(&theirs.service), Role::Foreign(_)), "{f}");
    }
    let mut rbs_class = s.clone();
    rbs_class.service.spec.as_mut().unwrap().load_balancer_class =
        Some("networking.gke.io/l4-regional-external".into());
    assert!(matches!(role(&rbs_class.service), Role::Foreign(_)));
}

#[test]
fn upstream_netlb_finalizer_makes_a_service_ours() {
    let s = Scenario::new().annotation("cloud.google.com/l4-rbs", "enabled");
    let adopted = with_finalizers(s.clone(), &[NETLB_FINALIZER]);
    assert_eq!(role(&adopted.service), Role::Ours);
    // ... but never against a foreign class (checked first upstream).
    let mut classed = adopted.clone();
    classed.service.spec.as_mut().unwrap().load_balancer_class = Some("example.com/other".into());
    assert!(matches!(role(&classed.service), Role::Foreign(_)));
    // Type changed away: ours to delete.
    let mut cluster_ip = adopted;
    cluster_ip.service.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
    assert_eq!(role(&cluster_ip.service), Role::NotLoadBalancer);
}

#[test]
fn both_finalizers_added_and_removed_leaving_others() {
    let s = with_finalizers(Scenario::new(), &["example.com/keep", NETLB_FINALIZER]);
    let added = finalizers_with_ours(&s.service, true).expect("cleanup finalizer missing");
    assert_eq!(added, ["example.com/keep", NETLB_FINALIZER, LB_CLEANUP_FINALIZER]);
    let removed = finalizers_with_ours(&s.service, false).expect("netlb finalizer present");
    assert_eq!(removed, ["example.com/keep"]);
    let full = with_finalizers(Scenario::new(), &OUR_FINALIZERS);
    assert_eq!(finalizers_with_ours(&full.service, true), None);
    let none = with_finalizers(Scenario::new(), &["example.com/keep"]);
    assert_eq!(finalizers_with_ours(&none.service, false), None);
}

#[test]
fn a_forwarding_rule_on_a_backend_service_is_never_planned_over_or_deleted() {
    let s = Scenario::new();
    let mut gce = MiniGce::default();
    gce.converge(&s, 3).unwrap();
    let mut observed = gce.observed(&s.names(), None);
    assert!(!plan_delete(&s.names(), &observed).is_empty());
    let rule = observed
        .forwarding_rule
        .get_or_insert_with(ForwardingRule::default);
    rule.backend_service = "https://example.com/compute/v1/projects/p/regions/r/backendServices/x".into();
    assert!(forwarding_rule_is_foreign(observed.forwarding_rule.as_ref()));
    assert_eq!(plan_delete(&s.names(), &observed), []);
    let plan = s.ensure(&observed).unwrap();
    assert!(plan.implemented_elsewhere);
    assert!(plan.actions.is_empty() && plan.ingress_ip.is_none());
    // A brand-new Service whose name is taken that way gets no target pool either.
    let fresh = Observed {
        forwarding_rule: observed.forwarding_rule.clone(),
        ..Observed::default()
    };
    assert!(s.ensure(&fresh).unwrap().actions.is_empty());
}

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

/// Which Services ask for a backend-service (RBS) NetLB: ingress-gce's WantsL4NetLB and
/// isRBSBasedService inputs (l4/annotations/service.go, l4/controllers/l4netlbcontroller.go).
#[test]
fn rbs_is_asked_for_by_the_class_or_the_exact_annotation() {
    use crate::lb::ownership::{RBS_LB_CLASS, wants_rbs};
    let class = |s: Scenario, c: &str| {
        let mut s = s;
        s.service.spec.as_mut().unwrap().load_balancer_class = Some(c.into());
        s
    };
    let plain = Scenario::new();
    assert!(!wants_rbs(&plain.service), "neither: target pool");
    assert!(wants_rbs(
        &plain
            .clone()
            .annotation("cloud.google.com/l4-rbs", "enabled")
            .service
    ));
    assert!(!wants_rbs(
        &plain
            .clone()
            .annotation("cloud.google.com/l4-rbs", "Enabled")
            .service
    ));
    assert!(wants_rbs(&class(plain.clone(), RBS_LB_CLASS).service));
    // The class wins over the Internal annotation (ingress-gce provisions an external LB).
    let internal = plain
        .clone()
        .annotation("networking.gke.io/load-balancer-type", "Internal");
    assert!(wants_rbs(&class(internal.clone(), RBS_LB_CLASS).service));
    // Without the class, Internal stays internal even with the RBS annotation.
    assert!(!wants_rbs(
        &internal.annotation("cloud.google.com/l4-rbs", "enabled").service
    ));
    // Another class (the legacy target-pool one included) is not RBS, whatever the annotation.
    let annotated = plain.clone().annotation("cloud.google.com/l4-rbs", "enabled");
    assert!(!wants_rbs(
        &class(annotated.clone(), LEGACY_EXTERNAL_LB_CLASS).service
    ));
    assert!(!wants_rbs(&class(annotated.clone(), "example.com/other").service));
    // The v2 finalizer alone is no request (svcnet reads it as "may own RBS objects").
    assert!(!wants_rbs(
        &with_finalizers(plain, &["gke.networking.io/l4-netlb-v2"]).service
    ));
    let mut not_lb = annotated;
    not_lb.service.spec.as_mut().unwrap().type_ = Some("NodePort".into());
    assert!(!wants_rbs(&not_lb.service));
}

/// `--rbs-netlb`: RBS Services are ours, the NetLB v2 finalizer is ours, the rest is as without it.
#[test]
fn with_the_rbs_flag_rbs_services_and_the_v2_finalizer_are_ours() {
    use crate::lb::ownership::{RBS_FINALIZER, has_any_of_ours, role_for};
    let rbs = Scenario::new().annotation("cloud.google.com/l4-rbs", "enabled");
    assert_eq!(role_for(&rbs.service, true), Role::Rbs);
    assert!(matches!(role_for(&rbs.service, false), Role::Foreign(_)));
    // The v2 finalizer without the annotation: a Service leaving RBS (ours) or ingress-gce's.
    let leaving = with_finalizers(Scenario::new(), &[RBS_FINALIZER]);
    assert_eq!(role_for(&leaving.service, true), Role::Ours);
    assert!(matches!(role_for(&leaving.service, false), Role::Foreign(_)));
    assert!(has_any_of_ours(&leaving.service, true));
    assert!(!has_any_of_ours(&leaving.service, false));
    // No longer a LoadBalancer with the v2 finalizer: torn down, not skipped.
    let mut gone = with_finalizers(rbs.clone(), &[RBS_FINALIZER]);
    gone.service.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
    assert_eq!(role_for(&gone.service, true), Role::NotLoadBalancer);
    // Another class stays another controller's, flag or not; plain Services keep a target pool.
    let mut other = Scenario::new();
    other.service.spec.as_mut().unwrap().load_balancer_class = Some("example.com/other".into());
    assert!(matches!(role_for(&other.service, true), Role::Foreign(_)));
    assert_eq!(role_for(&Scenario::new().service, true), Role::Ours);
}
