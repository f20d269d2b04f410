//! Every branch of the service controller's next step, from the Service alone.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{Step, next_step};
use crate::lb::ownership::{ILB_FINALIZER, LB_CLEANUP_FINALIZER, NETLB_FINALIZER, RBS_FINALIZER};
use crate::testutil::Scenario;

fn with_finalizers(s: Scenario, finalizers: &[&str]) -> Scenario {
    let mut s = s;
    s.service.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
    s
}

fn deleting(s: Scenario) -> Scenario {
    let mut s = s;
    s.service.metadata.deletion_timestamp = Some(Time(Default::default()));
    s
}

fn cluster_ip(s: Scenario) -> Scenario {
    let mut s = s;
    s.service.spec.as_mut().expect("spec").type_ = Some("ClusterIP".into());
    s
}

fn internal() -> Scenario {
    Scenario::new().annotation("networking.gke.io/load-balancer-type", "Internal")
}

fn other_class(s: Scenario) -> Scenario {
    let mut s = s;
    s.service.spec.as_mut().expect("spec").load_balancer_class = Some("example.com/other".into());
    s
}

const EXTERNAL: [&str; 2] = [LB_CLEANUP_FINALIZER, NETLB_FINALIZER];
const INTERNAL: [&str; 2] = [LB_CLEANUP_FINALIZER, ILB_FINALIZER];

fn step(s: &Scenario) -> Step {
    next_step(&s.service, false)
}

#[test]
fn services_without_anything_of_ours_are_ignored_unless_they_want_an_lb() {
    assert_eq!(step(&cluster_ip(Scenario::new())), Step::Ignore);
    assert_eq!(step(&deleting(Scenario::new())), Step::Ignore);
    assert_eq!(step(&other_class(Scenario::new())), Step::Ignore);
}

#[test]
fn an_external_lb_gets_both_finalizers_before_it_is_synced() {
    assert_eq!(
        step(&Scenario::new()),
        Step::AddExternalFinalizers { fresh: true }
    );
    // Upstream's netlb finalizer alone: adopted, may own objects.
    let adopted = with_finalizers(Scenario::new(), &[NETLB_FINALIZER]);
    assert_eq!(step(&adopted), Step::AddExternalFinalizers { fresh: false });
    assert_eq!(
        step(&with_finalizers(Scenario::new(), &EXTERNAL)),
        Step::SyncExternal
    );
}

#[test]
fn deletion_or_a_type_change_tears_down() {
    let ours = with_finalizers(Scenario::new(), &EXTERNAL);
    assert_eq!(step(&deleting(ours.clone())), Step::TearDown);
    assert_eq!(step(&cluster_ip(ours)), Step::TearDown);
    let internal_ours = with_finalizers(internal(), &INTERNAL);
    assert_eq!(step(&deleting(internal_ours)), Step::TearDown);
    // Only upstream's netlb finalizer on a Terminating Service: released too.
    assert_eq!(
        step(&deleting(with_finalizers(Scenario::new(), &[NETLB_FINALIZER]))),
        Step::TearDown
    );
}

#[test]
fn an_internal_lb_gets_its_finalizers_then_is_synced() {
    let Step::SetInternalFinalizers(next) = step(&internal()) else {
        panic!("expected the internal finalizers");
    };
    assert_eq!(next, INTERNAL);
    assert_eq!(step(&with_finalizers(internal(), &INTERNAL)), Step::SyncInternal);
}

#[test]
fn switching_kinds_tears_the_old_one_down_first() {
    let was_external = with_finalizers(
        internal(),
        &[LB_CLEANUP_FINALIZER, NETLB_FINALIZER, ILB_FINALIZER],
    );
    assert_eq!(step(&was_external), Step::LeaveExternal);
    let was_internal = with_finalizers(Scenario::new(), &INTERNAL);
    assert_eq!(step(&was_internal), Step::LeaveInternal);
}

#[test]
fn another_controllers_service_loses_our_finalizers_only() {
    let foreign = with_finalizers(other_class(Scenario::new()), &EXTERNAL);
    assert!(
        matches!(step(&foreign), Step::DropFinalizers(_)),
        "{:?}",
        step(&foreign)
    );
}

fn rbs_step(s: &Scenario) -> Step {
    next_step(&s.service, true)
}

fn rbs_annotated() -> Scenario {
    Scenario::new().annotation("cloud.google.com/l4-rbs", "enabled")
}

fn rbs_class() -> Scenario {
    let mut s = Scenario::new();
    s.service.spec.as_mut().expect("spec").load_balancer_class =
        Some("networking.gke.io/l4-regional-external".into());
    s
}

#[test]
fn without_the_flag_rbs_services_stay_another_controllers() {
    assert_eq!(step(&rbs_annotated()), Step::Ignore);
    assert_eq!(step(&rbs_class()), Step::Ignore);
    // The NetLB v2 finalizer is ingress-gce's then: ours come off, nothing is torn down.
    let theirs = with_finalizers(Scenario::new(), &[RBS_FINALIZER, LB_CLEANUP_FINALIZER]);
    assert!(matches!(step(&theirs), Step::DropFinalizers(_)));
}

#[test]
fn with_the_flag_an_rbs_service_gets_the_v2_finalizer_then_is_synced() {
    for s in [rbs_annotated(), rbs_class()] {
        assert_eq!(
            rbs_step(&s),
            Step::SetRbsFinalizers(vec![RBS_FINALIZER.to_owned()])
        );
        assert_eq!(rbs_step(&with_finalizers(s, &[RBS_FINALIZER])), Step::SyncRbs);
    }
    // A Service without the class or annotation keeps the target pool, flag or not.
    assert_eq!(
        rbs_step(&Scenario::new()),
        Step::AddExternalFinalizers { fresh: true }
    );
    // Internal wins over the annotation, the RBS class over Internal (as in ingress-gce).
    assert_eq!(
        rbs_step(&internal().annotation("cloud.google.com/l4-rbs", "enabled")),
        Step::SetInternalFinalizers(INTERNAL.map(str::to_owned).to_vec())
    );
    let class_and_internal = {
        let mut s = internal();
        s.service.spec.as_mut().expect("spec").load_balancer_class =
            Some("networking.gke.io/l4-regional-external".into());
        s
    };
    assert_eq!(
        rbs_step(&class_and_internal),
        Step::SetRbsFinalizers(vec![RBS_FINALIZER.to_owned()])
    );
}

#[test]
fn with_the_flag_switching_to_and_from_rbs_tears_the_old_kind_down_first() {
    assert_eq!(
        rbs_step(&with_finalizers(rbs_annotated(), &EXTERNAL)),
        Step::LeaveExternalForRbs
    );
    assert_eq!(
        rbs_step(&with_finalizers(rbs_annotated(), &INTERNAL)),
        Step::LeaveInternalForRbs
    );
    // Losing the annotation: RBS goes before the target pool's finalizers go on.
    assert_eq!(
        rbs_step(&with_finalizers(Scenario::new(), &[RBS_FINALIZER])),
        Step::LeaveRbs
    );
    assert_eq!(
        rbs_step(&with_finalizers(internal(), &[RBS_FINALIZER])),
        Step::LeaveRbs
    );
    assert_eq!(
        rbs_step(&with_finalizers(other_class(Scenario::new()), &[RBS_FINALIZER])),
        Step::LeaveRbs
    );
    // After the teardown: the target pool's finalizers, as for a new Service.
    assert_eq!(
        rbs_step(&Scenario::new()),
        Step::AddExternalFinalizers { fresh: true }
    );
}

#[test]
fn with_the_flag_deletion_or_type_change_tears_rbs_down() {
    assert_eq!(
        rbs_step(&deleting(with_finalizers(rbs_annotated(), &[RBS_FINALIZER]))),
        Step::TearDown
    );
    assert_eq!(
        rbs_step(&cluster_ip(with_finalizers(rbs_annotated(), &[RBS_FINALIZER]))),
        Step::TearDown
    );
    assert_eq!(rbs_step(&deleting(rbs_annotated())), Step::Ignore);
    assert_eq!(rbs_step(&cluster_ip(rbs_annotated())), Step::Ignore);
}
