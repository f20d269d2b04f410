//! External (target pool) load balancers: Service -> desired GCE objects -> ordered calls.
//!
//! Flow per sync: [`ensure::lb_names`] (what to GET) -> I/O fills [`Observed`](crate::objects::observed::Observed) ->
//! [`ensure::ensure`] (validate, resolve IP, build [`desired::DesiredLb`], diff in [`plan`]) ->
//! I/O executes the [`Action`](crate::objects::action::Action)s in order. On Service deletion: [`delete::plan_delete`].
//! Which Services are ours at all: [`ownership`].

pub mod address;
pub mod delete;
pub mod desired;
pub mod drift;
pub mod ensure;
pub mod hosts;
pub mod internal;
pub mod ownership;
pub mod plan;
pub mod spec;
pub mod stages;

#[cfg(test)]
mod tests;

pub use ownership::{
    LB_CLEANUP_FINALIZER, LEGACY_EXTERNAL_LB_CLASS, NETLB_FINALIZER, Role, role, wants_load_balancer,
};

/// Event reasons the service controller emits (Normal unless noted).
pub const EVENT_ENSURING: &str = "EnsuringLoadBalancer";
pub const EVENT_ENSURED: &str = "EnsuredLoadBalancer";
pub const EVENT_UPDATED: &str = "UpdatedLoadBalancer";
pub const EVENT_DELETING: &str = "DeletingLoadBalancer";
pub const EVENT_DELETED: &str = "DeletedLoadBalancer";
/// Warning: carries the [`crate::Error`] (or GCE error) message.
pub const EVENT_SYNC_FAILED: &str = "SyncLoadBalancerFailed";
