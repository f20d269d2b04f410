use k8s_openapi::jiff::Timestamp;

use super::*;

fn at(second: i64) -> Time {
    Time(Timestamp::from_second(second).unwrap())
}

fn ready(status: ConditionStatus, reason: &str, generation: i64, now: i64) -> Condition {
    new_condition(
        ConditionType::Ready,
        status,
        reason,
        format!("msg {reason}"),
        Some(generation),
        at(now),
    )
}

#[test]
fn new_condition_fills_metav1_fields() {
    let c = new_condition(
        ConditionType::Failed,
        ConditionStatus::True,
        "SyncFailed",
        "quota exceeded",
        Some(4),
        at(100),
    );
    assert_eq!(c.type_, "Failed");
    assert_eq!(c.status, "True");
    assert_eq!(c.reason, "SyncFailed");
    assert_eq!(c.message, "quota exceeded");
    assert_eq!(c.observed_generation, Some(4));
    assert_eq!(c.last_transition_time, at(100));
}

#[test]
fn adds_missing_condition() {
    let mut status = CloudLoadBalancerStatus::default();
    assert!(status.set_condition(ready(ConditionStatus::False, "Ensuring", 1, 100)));
    assert_eq!(status.conditions.len(), 1);
    assert!(!status.is_ready());
}

#[test]
fn same_status_keeps_transition_time_but_takes_new_details() {
    let mut status = CloudLoadBalancerStatus::default();
    status.set_condition(ready(ConditionStatus::True, "Ensured", 1, 100));
    assert!(status.set_condition(ready(ConditionStatus::True, "Updated", 2, 200)));
    let c = status.condition(ConditionType::Ready).unwrap();
    assert_eq!(
        c.last_transition_time,
        at(100),
        "status did not flip, time must stay"
    );
    assert_eq!(c.reason, "Updated");
    assert_eq!(c.message, "msg Updated");
    assert_eq!(c.observed_generation, Some(2));
    assert_eq!(status.conditions.len(), 1);
}

#[test]
fn status_flip_moves_transition_time() {
    let mut status = CloudLoadBalancerStatus::default();
    status.set_condition(ready(ConditionStatus::True, "Ensured", 1, 100));
    assert!(status.set_condition(ready(ConditionStatus::False, "Failed", 1, 300)));
    let c = status.condition(ConditionType::Ready).unwrap();
    assert_eq!(c.status, "False");
    assert_eq!(c.last_transition_time, at(300));
    assert!(!status.is_ready());
}

#[test]
fn identical_condition_reports_no_change() {
    let mut status = CloudLoadBalancerStatus::default();
    status.set_condition(ready(ConditionStatus::True, "Ensured", 1, 100));
    let before = status.clone();
    assert!(!status.set_condition(ready(ConditionStatus::True, "Ensured", 1, 999)));
    assert_eq!(status, before);
}

#[test]
fn types_are_kept_apart() {
    let mut status = CloudLoadBalancerStatus::default();
    status.set_condition(ready(ConditionStatus::True, "Ensured", 1, 100));
    status.set_condition(new_condition(
        ConditionType::Progressing,
        ConditionStatus::False,
        "Idle",
        "",
        Some(1),
        at(100),
    ));
    assert_eq!(status.conditions.len(), 2);
    assert!(status.is_ready());
    assert!(status.remove_condition(ConditionType::Progressing));
    assert!(!status.remove_condition(ConditionType::Progressing));
    assert_eq!(status.conditions.len(), 1);
    assert!(status.condition(ConditionType::Failed).is_none());
}

#[test]
fn status_from_bool() {
    assert_eq!(ConditionStatus::from_bool(true).as_str(), "True");
    assert_eq!(ConditionStatus::from_bool(false).as_str(), "False");
    assert_eq!(ConditionStatus::Unknown.as_str(), "Unknown");
}
