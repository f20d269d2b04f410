//! Load balancer planning, pure: Service -> desired GCE objects -> ordered calls, for the kinds
//! as peers: [`external`] (target pool), [`internal`] (passthrough, backend service) and [`rbs`]
//! (external passthrough over a backend service, as GKE's controller builds it).
//! What both use sits here: which Services are ours ([`ownership`]), the validated Service
//! ([`spec`]), the nodes behind an LB ([`hosts`]), the backend service step of the two backend-service
//! kinds ([`backend_service`]), upstream's drift tolerances ([`drift`]) and
//! which calls of a plan may run at once ([`stages`]).
//!
//! To add a GCE call (a new mutation on a new or existing object), touch, top-down:
//! - `objects.rs`: the object's mirror (only the fields set or compared), if new;
//! - `objects/action.rs`: the `Action` variant and its `label`, `target_name`, `target_key`;
//! - the planner that emits it (`lb/external/plan.rs`, `lb/external/delete.rs`,
//!   `lb/internal/plan.rs` or `lb/internal/delete.rs`), and `lb/stages.rs` if it may run beside
//!   its neighbours;
//! - `gce/calls.rs`: a `send!` row (collection, verb, setters) in `call_once` or in the group it
//!   dispatches to; `gce/outcome.rs` where GCE's 404/409/in-use answers mean "done"; `gce/client.rs`
//!   (and the crate's `google-cloud-compute-v1` feature list) for a new service;
//!   `gce/convert.rs` needs nothing when the REST field names match;
//! - reading it back: `objects/observed.rs` and a row in `gce/observe.rs` or `gce/observe_ilb.rs`
//!   (a new collection: a row in `gce/read.rs`);
//! - tests: `testutil/mini_gce/` (`MiniGce::apply`), and svcnet-fake-gce's REST route
//!   (`e2e/fake-gce`) for the end-to-end tests.
//!
//! Never imports: crate::gce, crate::controllers, crate::routes, crate::nodes.

pub(crate) mod backend_service;
pub(crate) mod drift;
pub(crate) mod external;
pub(crate) mod families;
pub(crate) mod hosts;
pub(crate) mod internal;
pub(crate) mod ipv6;
pub(crate) mod ownership;
pub(crate) mod rbs;
pub(crate) mod spec;
pub(crate) mod stages;

#[cfg(test)]
mod tests;

pub(crate) use ownership::Role;

/// Event reasons the service controller emits (Normal unless noted).
pub(crate) const EVENT_ENSURING: &str = "EnsuringLoadBalancer";
pub(crate) const EVENT_ENSURED: &str = "EnsuredLoadBalancer";
pub(crate) const EVENT_UPDATED: &str = "UpdatedLoadBalancer";
pub(crate) const EVENT_DELETING: &str = "DeletingLoadBalancer";
pub(crate) const EVENT_DELETED: &str = "DeletedLoadBalancer";
/// Warning: carries the [`crate::Error`] (or GCE error) message.
pub(crate) const EVENT_SYNC_FAILED: &str = "SyncLoadBalancerFailed";
