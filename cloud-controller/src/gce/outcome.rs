//! How a GCE call's final answer counts: done, already done (404 on a delete/remove, 409 on an
//! insert, GCE's 400 for adding a member twice or removing a non-member: someone, maybe our own
//! earlier attempt, already did it), kept in use (400 resourceInUseByAnotherResource on a delete
//! of a shared object another LB uses), or failed.

use crate::gce::error::GceError;
use crate::objects::action::Action;

/// How an action ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Done,
    /// 404 on delete/remove or 409 on insert: the state was already what we wanted.
    AlreadyDone,
    /// A `DeleteHealthCheck { keep_if_in_use: true }` that GCE refused with
    /// resourceInUseByAnotherResource: the check stays for the pools still using it. Not an
    /// error; the rest of the plan was built assuming the check goes, so the caller stops there
    /// and re-plans knowing it stays (`Observed::nodes_health_check_used_elsewhere`).
    KeptInUse,
}

/// How the (final) result of an action's call counts; see the module docs.
pub(crate) fn outcome(action: &Action, result: Result<(), GceError>) -> Result<Outcome, GceError> {
    match result {
        Ok(()) => Ok(Outcome::Done),
        Err(e) if is_delete(action) && e.is_not_found() => Ok(Outcome::AlreadyDone),
        Err(e) if is_insert(action) && e.is_already_exists() => Ok(Outcome::AlreadyDone),
        Err(e) if keeps_if_in_use(action) && e.is_in_use() => Ok(Outcome::KeptInUse),
        Err(e) if membership_already(action, &e) => Ok(Outcome::AlreadyDone),
        Err(e) => Err(e),
    }
}

fn is_delete(action: &Action) -> bool {
    matches!(
        action,
        Action::DeleteAddress { .. }
            | Action::DeleteFirewall { .. }
            | Action::DeleteHealthCheck { .. }
            | Action::DeleteTargetPool { .. }
            | Action::DeleteForwardingRule { .. }
            | Action::RemoveInstances { .. }
            | Action::RemoveHealthCheck { .. }
            | Action::DeleteInstanceGroup { .. }
            | Action::DeleteHealthCheckV1 { .. }
            | Action::DeleteRegionHealthCheck { .. }
            | Action::DeleteBackendService { .. }
    )
}

/// GCE's 400 for adding a member a pool already has, or removing one it does not: the state is
/// what the call wanted (a retry of a call that went through, or a pool changed meanwhile). A
/// batch GCE refused that way changed nothing; the sync's next round sees the pool and plans
/// what is still missing.
fn membership_already(action: &Action, e: &GceError) -> bool {
    if e.status != Some(400) && e.reason.as_deref() != Some("invalid") {
        return false;
    }
    match action {
        Action::AddInstances { .. } | Action::AddHealthCheck { .. } => {
            e.message.contains("already a member of")
        }
        Action::AddGroupInstances { .. } => {
            e.reason.as_deref() == Some("memberAlreadyExists") || e.message.contains("already a member of")
        }
        Action::RemoveGroupInstances { .. } => {
            e.reason.as_deref() == Some("memberNotFound") || e.message.contains("is not a member of")
        }
        Action::RemoveInstances { .. } | Action::RemoveHealthCheck { .. } => {
            e.message.contains("is not a member of")
        }
        _ => false,
    }
}

fn keeps_if_in_use(action: &Action) -> bool {
    matches!(
        action,
        Action::DeleteHealthCheck {
            keep_if_in_use: true,
            ..
        } | Action::DeleteHealthCheckV1 {
            keep_if_in_use: true,
            ..
        } | Action::DeleteRegionHealthCheck {
            keep_if_in_use: true,
            ..
        } | Action::DeleteInstanceGroup { .. }
            | Action::DeleteBackendService { .. }
    )
}

fn is_insert(action: &Action) -> bool {
    matches!(
        action,
        Action::CreateAddress(_)
            | Action::CreateFirewall(_)
            | Action::CreateHealthCheck(_)
            | Action::CreateTargetPool(_)
            | Action::CreateForwardingRule(_)
            | Action::CreateInstanceGroup { .. }
            | Action::CreateHealthCheckV1(_)
            | Action::CreateRegionHealthCheck(_)
            | Action::CreateBackendService(_)
    )
}

#[cfg(test)]
mod tests;
