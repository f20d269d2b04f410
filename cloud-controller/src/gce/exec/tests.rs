use super::{Outcome, outcome};
use crate::gce::error::GceError;
use crate::lb::action::Action;

fn err(status: u16, reason: &str, from_operation: bool) -> GceError {
    GceError {
        status: Some(status),
        reason: Some(reason.to_owned()),
        from_operation,
        ..GceError::new("call", "m")
    }
}

fn delete_hc(keep_if_in_use: bool) -> Action {
    Action::DeleteHealthCheck {
        name: "k8s-0123456789abcdef-node".into(),
        keep_if_in_use,
    }
}

#[test]
fn in_use_keeps_only_the_shared_health_check() {
    // The HTTP answer and the operation form of the same refusal.
    for e in [
        err(400, "resourceInUseByAnotherResource", false),
        err(400, "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE", true),
    ] {
        assert_eq!(outcome(&delete_hc(true), Err(e.clone())), Ok(Outcome::KeptInUse));
        // The LB's own check (or a pool, an address) in use is a real failure: the sync fails
        // and the finalizer stays.
        assert_eq!(outcome(&delete_hc(false), Err(e.clone())), Err(e.clone()));
        let pool = Action::DeleteTargetPool { name: "a1".into() };
        assert_eq!(outcome(&pool, Err(e.clone())), Err(e));
    }
}

#[test]
fn other_answers_of_the_shared_check_delete() {
    assert_eq!(outcome(&delete_hc(true), Ok(())), Ok(Outcome::Done));
    assert_eq!(
        outcome(&delete_hc(true), Err(err(404, "notFound", false))),
        Ok(Outcome::AlreadyDone)
    );
    let forbidden = err(403, "forbidden", false);
    assert_eq!(outcome(&delete_hc(true), Err(forbidden.clone())), Err(forbidden));
}
