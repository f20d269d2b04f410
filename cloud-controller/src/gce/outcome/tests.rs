use super::{Outcome, outcome};
use crate::gce::error::GceError;
use crate::objects::action::Action;

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

#[test]
fn membership_answers_count_as_done_only_for_their_verb() {
    let msg = |m: &str| GceError {
        status: Some(400),
        reason: Some("invalid".into()),
        message: m.into(),
        ..GceError::new("call", "")
    };
    let not_member = msg(
        "The resource 'projects/p/zones/z/instances/n1' is not a member of 'projects/p/regions/r/targetPools/a1'.",
    );
    let already = msg(
        "The resource 'projects/p/zones/z/instances/n1' is already a member of 'projects/p/regions/r/targetPools/a1'.",
    );
    let remove = Action::RemoveInstances {
        pool: "a1".into(),
        instances: vec!["n1".into()],
    };
    let add = Action::AddInstances {
        pool: "a1".into(),
        instances: vec!["n1".into()],
    };
    let remove_hc = Action::RemoveHealthCheck {
        pool: "a1".into(),
        health_check: "hc".into(),
    };
    let add_hc = Action::AddHealthCheck {
        pool: "a1".into(),
        health_check: "hc".into(),
    };
    assert_eq!(
        outcome(&remove, Err(not_member.clone())),
        Ok(Outcome::AlreadyDone)
    );
    assert_eq!(
        outcome(&remove_hc, Err(not_member.clone())),
        Ok(Outcome::AlreadyDone)
    );
    assert_eq!(outcome(&add, Err(already.clone())), Ok(Outcome::AlreadyDone));
    assert_eq!(outcome(&add_hc, Err(already.clone())), Ok(Outcome::AlreadyDone));
    // The other verb's message, or another 400, is a real failure.
    assert_eq!(outcome(&add, Err(not_member.clone())), Err(not_member.clone()));
    assert_eq!(outcome(&remove, Err(already.clone())), Err(already));
    let other = msg("Invalid value for field 'instances[0]'");
    assert_eq!(outcome(&remove, Err(other.clone())), Err(other));
    let pool = Action::DeleteTargetPool { name: "a1".into() };
    assert_eq!(outcome(&pool, Err(not_member.clone())), Err(not_member));
}
