//! What one reconcile of a Service does next, decided from the Service alone (its role, our
//! finalizers, deletion): which load balancer to build or tear down, and in which order the
//! finalizers change around that. Pure, so every branch is unit-tested.

use k8s_openapi::api::core::v1::Service;

use crate::lb::Role;
use crate::lb::ownership::{
    ILB_FINALIZER, LB_CLEANUP_FINALIZER, NETLB_FINALIZER, OUR_ILB_FINALIZERS, RBS_FINALIZER, finalizers_with,
    finalizers_with_ours, has_any_of_ours, has_finalizer, role_for,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Not ours and nothing of ours on it: no call at all.
    Ignore,
    /// Another controller's Service carrying our finalizers (upstream's ImplementedElsewhere):
    /// drop them, no GCE call; the objects stay with the controller that owns them.
    DropFinalizers(&'static str),
    /// Deleted, or no longer of type LoadBalancer: tear everything down, then drop our finalizers.
    TearDown,
    /// Internal: set the finalizer list to this (both of ours go on before the first object).
    SetInternalFinalizers(Vec<String>),
    /// Turned internal: tear the external LB down, then drop its finalizer.
    LeaveExternal,
    /// Build or repair the internal LB.
    SyncInternal,
    /// Turned external: tear the internal LB down, then drop its finalizer.
    LeaveInternal,
    /// Both of our external finalizers go on before the first object. `fresh`: the Service had
    /// none of ours, so it owns no GCE object yet (unless a backend-service controller's
    /// forwarding rule has its name, which is checked first). One that carries upstream's netlb
    /// finalizer alone may own objects (it is adopted), so it is not fresh.
    AddExternalFinalizers { fresh: bool },
    /// Build or repair the external LB.
    SyncExternal,
    /// Turned RBS: tear the target-pool LB down, then drop its finalizers.
    LeaveExternalForRbs,
    /// Turned RBS: tear the internal LB down, then drop its finalizers.
    LeaveInternalForRbs,
    /// RBS: set the finalizer list to this (the NetLB v2 one goes on before the first object).
    SetRbsFinalizers(Vec<String>),
    /// Build or repair the backend-service NetLB.
    SyncRbs,
    /// No longer RBS (or no longer ours): tear the RBS NetLB down, clear its status annotations,
    /// then drop the NetLB v2 finalizer; the next step builds the new kind.
    LeaveRbs,
}

/// The next step for `svc` (see [`Step`]); `rbs`: `--rbs-netlb` is on.
pub(crate) fn next_step(svc: &Service, rbs: bool) -> Step {
    let role = role_for(svc, rbs);
    let deleting = svc.metadata.deletion_timestamp.is_some();
    let ours = has_any_of_ours(svc, rbs);
    if !ours && (!matches!(role, Role::Ours | Role::Internal | Role::Rbs) || deleting) {
        return Step::Ignore;
    }
    let tearing_down = deleting || role == Role::NotLoadBalancer;
    // The RBS NetLB goes before any other kind is built (the objects share the rule's name).
    if rbs && !tearing_down && role != Role::Rbs && has_finalizer(svc, RBS_FINALIZER) {
        return Step::LeaveRbs;
    }
    match role {
        Role::Rbs if deleting => Step::TearDown,
        Role::Rbs if has_finalizer(svc, NETLB_FINALIZER) => Step::LeaveExternalForRbs,
        Role::Rbs if has_finalizer(svc, ILB_FINALIZER) => Step::LeaveInternalForRbs,
        Role::Rbs => match finalizers_with(svc, &[RBS_FINALIZER], &[LB_CLEANUP_FINALIZER]) {
            Some(next) => Step::SetRbsFinalizers(next),
            None => Step::SyncRbs,
        },
        Role::Foreign(reason) => Step::DropFinalizers(reason),
        Role::NotLoadBalancer => Step::TearDown,
        Role::Ours | Role::Internal if deleting => Step::TearDown,
        Role::Internal => match finalizers_with(svc, &OUR_ILB_FINALIZERS, &[]) {
            Some(next) => Step::SetInternalFinalizers(next),
            // Upstream deletes the other scheme's objects before ensuring.
            None if has_finalizer(svc, NETLB_FINALIZER) => Step::LeaveExternal,
            None => Step::SyncInternal,
        },
        Role::Ours if has_finalizer(svc, ILB_FINALIZER) => Step::LeaveInternal,
        Role::Ours if finalizers_with_ours(svc, true).is_some() => {
            Step::AddExternalFinalizers { fresh: !ours }
        }
        Role::Ours => Step::SyncExternal,
    }
}

#[cfg(test)]
mod tests;
