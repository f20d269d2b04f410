//! One GCE call per [`Action`] through the official client, its operation waited for. Retries and
//! classification of the answer are the caller's (`exec`).
//!
//! Every call has the same shape: a request of the action's collection scoped to the project (and
//! region or zone), its name or body, the request id, then the operation wait. [`send!`] writes
//! that shape once, so each action is one row: collection, verb, and what it sets. The rows are
//! matched exhaustively, so a new [`Action`] does not compile until it has its row.

use google_cloud_compute_v1::model;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::gce::client::Gce;
use crate::gce::convert::to_model;
use crate::gce::error::GceError;
use crate::gce::ops::wait;
use crate::objects::Firewall;
use crate::objects::action::Action;

/// What every row needs: the clients, the call's name (for errors) and the request id.
struct Call<'a> {
    gce: &'a Gce,
    call: &'a str,
    rid: &'a str,
}

/// `send!(c, collection.verb().set_x(..)...)`: the request on `c.gce.collection` with the
/// project set first and `c`'s request id last, sent and its operation waited for.
macro_rules! send {
    ($c:expr, $collection:ident . $verb:ident () $(. $setter:ident ($arg:expr))*) => {
        wait(
            $c.gce,
            $c.call,
            $c.gce
                .$collection
                .$verb()
                .set_project(&$c.gce.project)
                $(.$setter($arg))*
                .set_request_id($c.rid)
                .poller(),
        )
        .await
        .map(drop)
    };
}

/// [`send!`] for a regional collection: the region set right after the project.
macro_rules! send_regional {
    ($c:expr, $collection:ident . $verb:ident () $(. $setter:ident ($arg:expr))*) => {
        send!($c, $collection.$verb().set_region(&$c.gce.region) $(.$setter($arg))*)
    };
}

/// One attempt of `action` with request id `rid`.
pub(crate) async fn call_once(gce: &Gce, action: &Action, call: &str, rid: &str) -> Result<(), GceError> {
    let c = Call { gce, call, rid };
    match action {
        Action::CreateAddress(a) => {
            let m: model::Address = to_model(call, a)?;
            send_regional!(c, addresses.insert().set_body(m))
        }
        Action::DeleteAddress { name } => send_regional!(c, addresses.delete().set_address(name)),
        Action::CreateFirewall(f) => {
            let m: model::Firewall = to_model(call, f)?;
            send!(c, firewalls.insert().set_body(m))
        }
        Action::PatchFirewall(f) => {
            let m: model::Firewall = to_model(call, f)?;
            if patch_clears_nothing(f) {
                send!(c, firewalls.patch().set_firewall(&f.name).set_body(m))
            } else {
                send!(c, firewalls.update().set_firewall(&f.name).set_body(m))
            }
        }
        Action::DeleteFirewall { name } => send!(c, firewalls.delete().set_firewall(name)),
        Action::CreateHealthCheck(h) => {
            let m: model::HttpHealthCheck = to_model(call, h)?;
            send!(c, http_health_checks.insert().set_body(m))
        }
        Action::UpdateHealthCheck(h) => {
            let m: model::HttpHealthCheck = to_model(call, h)?;
            send!(
                c,
                http_health_checks
                    .update()
                    .set_http_health_check(&h.name)
                    .set_body(m)
            )
        }
        Action::DeleteHealthCheck { name, .. } => {
            send!(c, http_health_checks.delete().set_http_health_check(name))
        }
        Action::CreateTargetPool(_)
        | Action::DeleteTargetPool { .. }
        | Action::AddInstances { .. }
        | Action::RemoveInstances { .. }
        | Action::AddHealthCheck { .. }
        | Action::RemoveHealthCheck { .. }
        | Action::CreateForwardingRule(_)
        | Action::DeleteForwardingRule { .. }
        | Action::SetTarget { .. } => regional(&c, action).await,
        Action::CreateInstanceGroup { .. }
        | Action::DeleteInstanceGroup { .. }
        | Action::AddGroupInstances { .. }
        | Action::RemoveGroupInstances { .. }
        | Action::CreateHealthCheckV1(_)
        | Action::UpdateHealthCheckV1(_)
        | Action::DeleteHealthCheckV1 { .. }
        | Action::CreateRegionHealthCheck(_)
        | Action::UpdateRegionHealthCheck(_)
        | Action::DeleteRegionHealthCheck { .. }
        | Action::CreateBackendService(_)
        | Action::UpdateBackendService(_)
        | Action::DeleteBackendService { .. } => internal_lb(&c, action).await,
    }
}

/// Target pools with their members, and forwarding rules (the regional half of an external LB).
async fn regional(c: &Call<'_>, action: &Action) -> Result<(), GceError> {
    let call = c.call;
    match action {
        Action::CreateTargetPool(t) => {
            let m: model::TargetPool = to_model(call, t)?;
            send_regional!(c, target_pools.insert().set_body(m))
        }
        Action::DeleteTargetPool { name } => {
            send_regional!(c, target_pools.delete().set_target_pool(name))
        }
        Action::AddInstances { pool, instances } => {
            let m: model::TargetPoolsAddInstanceRequest = instances_body(call, instances)?;
            send_regional!(c, target_pools.add_instance().set_target_pool(pool).set_body(m))
        }
        Action::RemoveInstances { pool, instances } => {
            let m: model::TargetPoolsRemoveInstanceRequest = instances_body(call, instances)?;
            send_regional!(
                c,
                target_pools.remove_instance().set_target_pool(pool).set_body(m)
            )
        }
        Action::AddHealthCheck { pool, health_check } => {
            let m: model::TargetPoolsAddHealthCheckRequest = health_check_body(call, health_check)?;
            send_regional!(
                c,
                target_pools.add_health_check().set_target_pool(pool).set_body(m)
            )
        }
        Action::RemoveHealthCheck { pool, health_check } => {
            let m: model::TargetPoolsRemoveHealthCheckRequest = health_check_body(call, health_check)?;
            send_regional!(
                c,
                target_pools
                    .remove_health_check()
                    .set_target_pool(pool)
                    .set_body(m)
            )
        }
        Action::CreateForwardingRule(f) => {
            let m: model::ForwardingRule = to_model(call, f)?;
            send_regional!(c, forwarding_rules.insert().set_body(m))
        }
        Action::DeleteForwardingRule { name } => {
            send_regional!(c, forwarding_rules.delete().set_forwarding_rule(name))
        }
        Action::SetTarget {
            forwarding_rule,
            target,
        } => {
            let m: model::TargetReference = body(call, json!({ "target": target }))?;
            send_regional!(
                c,
                forwarding_rules
                    .set_target()
                    .set_forwarding_rule(forwarding_rule)
                    .set_body(m)
            )
        }
        other => Err(misrouted(call, other)),
    }
}

/// Unmanaged instance groups (zonal), health checks (global, and regional for RBS NetLBs) and
/// regional backend services: the backend-service LBs.
async fn internal_lb(c: &Call<'_>, action: &Action) -> Result<(), GceError> {
    let call = c.call;
    match action {
        Action::CreateInstanceGroup { zone, name } => {
            let m: model::InstanceGroup = body(call, json!({ "name": name }))?;
            send!(c, instance_groups.insert().set_zone(zone).set_body(m))
        }
        Action::DeleteInstanceGroup { zone, name } => {
            send!(
                c,
                instance_groups.delete().set_zone(zone).set_instance_group(name)
            )
        }
        Action::AddGroupInstances {
            zone,
            group,
            instances,
        } => {
            let m: model::InstanceGroupsAddInstancesRequest = instances_body(call, instances)?;
            send!(
                c,
                instance_groups
                    .add_instances()
                    .set_zone(zone)
                    .set_instance_group(group)
                    .set_body(m)
            )
        }
        Action::RemoveGroupInstances {
            zone,
            group,
            instances,
        } => {
            let m: model::InstanceGroupsRemoveInstancesRequest = instances_body(call, instances)?;
            send!(
                c,
                instance_groups
                    .remove_instances()
                    .set_zone(zone)
                    .set_instance_group(group)
                    .set_body(m)
            )
        }
        Action::CreateHealthCheckV1(_)
        | Action::UpdateHealthCheckV1(_)
        | Action::DeleteHealthCheckV1 { .. }
        | Action::CreateRegionHealthCheck(_)
        | Action::UpdateRegionHealthCheck(_)
        | Action::DeleteRegionHealthCheck { .. } => health_checks(c, action).await,
        Action::CreateBackendService(b) => {
            let m: model::BackendService = to_model(call, b)?;
            send_regional!(c, region_backend_services.insert().set_body(m))
        }
        Action::UpdateBackendService(b) => {
            let m: model::BackendService = to_model(call, b)?;
            send_regional!(
                c,
                region_backend_services
                    .update()
                    .set_backend_service(&b.name)
                    .set_body(m)
            )
        }
        Action::DeleteBackendService { name } => {
            send_regional!(c, region_backend_services.delete().set_backend_service(name))
        }
        other => Err(misrouted(call, other)),
    }
}

/// Health checks of the backend-service LBs: global (internal LBs) and regional (RBS NetLBs).
async fn health_checks(c: &Call<'_>, action: &Action) -> Result<(), GceError> {
    let call = c.call;
    match action {
        Action::CreateHealthCheckV1(h) => {
            let m: model::HealthCheck = to_model(call, h)?;
            send!(c, health_checks.insert().set_body(m))
        }
        Action::UpdateHealthCheckV1(h) => {
            let m: model::HealthCheck = to_model(call, h)?;
            send!(c, health_checks.update().set_health_check(&h.name).set_body(m))
        }
        Action::DeleteHealthCheckV1 { name, .. } => send!(c, health_checks.delete().set_health_check(name)),
        Action::CreateRegionHealthCheck(h) => {
            let m: model::HealthCheck = to_model(call, h)?;
            send_regional!(c, region_health_checks.insert().set_body(m))
        }
        Action::UpdateRegionHealthCheck(h) => {
            let m: model::HealthCheck = to_model(call, h)?;
            send_regional!(
                c,
                region_health_checks
                    .update()
                    .set_health_check(&h.name)
                    .set_body(m)
            )
        }
        Action::DeleteRegionHealthCheck { name, .. } => {
            send_regional!(c, region_health_checks.delete().set_health_check(name))
        }
        other => Err(misrouted(call, other)),
    }
}

/// A JSON request body into a client model (for the small verb bodies).
fn body<M: DeserializeOwned>(call: &str, v: serde_json::Value) -> Result<M, GceError> {
    serde_json::from_value(v).map_err(|e| GceError::new(call, format!("request body: {e}")))
}

/// `{"instances": [{"instance": url}, ...]}`: the body of every add/remove-members verb.
fn instances_body<M: DeserializeOwned>(call: &str, instances: &[String]) -> Result<M, GceError> {
    let refs: Vec<_> = instances.iter().map(|i| json!({ "instance": i })).collect();
    body(call, json!({ "instances": refs }))
}

/// `{"healthChecks": [{"healthCheck": url}]}`: a target pool's add/remove health check body.
fn health_check_body<M: DeserializeOwned>(call: &str, health_check: &str) -> Result<M, GceError> {
    body(call, json!({ "healthChecks": [{ "healthCheck": health_check }] }))
}

/// Firewalls: PATCH when every list of the desired object is non-empty (a merge that replaces
/// them), PUT otherwise, because a PATCH cannot clear a list (empty lists are not sent).
fn patch_clears_nothing(fw: &Firewall) -> bool {
    !fw.source_ranges.is_empty()
        && !fw.destination_ranges.is_empty()
        && !fw.target_tags.is_empty()
        && !fw.allowed.is_empty()
}

/// `call_once` routed an action of another group here.
fn misrouted(call: &str, action: &Action) -> GceError {
    GceError::new(call, format!("{} is not a call of this group", action.label()))
}
