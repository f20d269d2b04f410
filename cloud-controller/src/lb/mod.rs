//! External (target pool) load balancers: Service -> desired GCE objects -> ordered calls.
//!
//! Flow per sync: [`ensure::lb_names`] (what to GET) -> I/O fills [`observed::Observed`] ->
//! [`ensure::ensure`] (validate, resolve IP, build [`desired::DesiredLb`], diff in [`plan`]) ->
//! I/O executes the [`action::Action`]s in order. On Service deletion: [`delete::plan_delete`].

pub mod action;
pub mod address;
pub mod delete;
pub mod desired;
pub mod drift;
pub mod ensure;
pub mod hosts;
pub mod observed;
pub mod plan;
pub mod spec;
pub mod stages;

#[cfg(test)]
mod tests;

use k8s_openapi::api::core::v1::Service;

/// Finalizer the service controller puts on Services it built a load balancer for.
pub const LB_CLEANUP_FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";
/// Event reasons the service controller emits (Normal unless noted).
pub const EVENT_ENSURING: &str = "EnsuringLoadBalancer";
pub const EVENT_ENSURED: &str = "EnsuredLoadBalancer";
pub const EVENT_UPDATED: &str = "UpdatedLoadBalancer";
pub const EVENT_DELETING: &str = "DeletingLoadBalancer";
pub const EVENT_DELETED: &str = "DeletedLoadBalancer";
/// Warning: carries the [`crate::Error`] (or GCE error) message.
pub const EVENT_SYNC_FAILED: &str = "SyncLoadBalancerFailed";
/// The only loadBalancerClass this controller serves besides none (upstream's legacy class).
pub const LEGACY_EXTERNAL_LB_CLASS: &str = "networking.gke.io/l4-regional-external-legacy";
const LB_TYPE_ANNOTATIONS: [&str; 2] = [
    "networking.gke.io/load-balancer-type",
    "cloud.google.com/load-balancer-type",
];

/// Whether this controller builds an external target-pool LB for the Service: type LoadBalancer,
/// no foreign loadBalancerClass, not annotated Internal (internal LBs are out of svcnet's scope).
/// A Service that stops wanting one (but still has the finalizer) gets the delete plan.
pub fn wants_load_balancer(service: &Service) -> bool {
    let Some(spec) = service.spec.as_ref() else {
        return false;
    };
    if spec.type_.as_deref() != Some("LoadBalancer") {
        return false;
    }
    if spec
        .load_balancer_class
        .as_deref()
        .is_some_and(|c| c != LEGACY_EXTERNAL_LB_CLASS)
    {
        return false;
    }
    let annotations = service.metadata.annotations.as_ref();
    !LB_TYPE_ANNOTATIONS.iter().any(|key| {
        annotations
            .and_then(|a| a.get(*key))
            .is_some_and(|v| v.eq_ignore_ascii_case("internal"))
    })
}
