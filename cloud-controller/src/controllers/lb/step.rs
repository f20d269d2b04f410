//! What one reconcile of a Service does next, decided from the Service alone (its role, our
//! finalizers, deletion): which load balancer to build or tear down, and in which order the
//! finalizers change around that. Pure, so every branch is unit-tested.

use k8s_openapi::api::core::v1::Service;

use crate::lb::ownership::{
    ILB_FINALIZER, NETLB_FINALIZER, OUR_ILB_FINALIZERS, finalizers_with, finalizers_with_ours,
    has_any_of_ours, has_finalizer,
};
use crate::lb::{Role, role};

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
}

/// The next step for `svc` (see [`Step`]).
pub(crate) fn next_step(svc: &Service) -> Step {
    let role = role(svc);
    let deleting = svc.metadata.deletion_timestamp.is_some();
    let ours = has_any_of_ours(svc);
    if !ours && (!matches!(role, Role::Ours | Role::Internal) || deleting) {
        return Step::Ignore;
    }
    match role {
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
