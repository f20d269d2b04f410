//! Executes the domain's [`Action`]s with the official client: one call per action, waiting for
//! its operation. 404 on a delete/remove and 409 on an insert count as done (someone, maybe our
//! own earlier attempt, already did it), as does GCE's 400 for adding a pool member twice or
//! removing a non-member; 400 resourceInUseByAnotherResource on a delete of the
//! shared node health check counts as done-but-kept (another LB's pool uses it). Every mutating
//! call carries a `requestId`, the same for all attempts of one action until its operation ends
//! DONE with an error (`request_id::MutationId`). Rate limits, quota, 429 and 5xx back off with
//! backon and retry; every attempt first takes a token from the client-side rate limiter of its quota group.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use google_cloud_compute_v1::model;
use serde_json::json;

use crate::gce::client::Gce;
use crate::gce::convert::to_model;
use crate::gce::error::GceError;
use crate::gce::ops::wait;
use crate::gce::ratelimit::QuotaGroup;
use crate::gce::request_id::MutationId;
use crate::objects::action::Action;
use crate::objects::{Firewall, Route};

/// How an action ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// 404 on delete/remove or 409 on insert: the state was already what we wanted.
    AlreadyDone,
    /// A `DeleteHealthCheck { keep_if_in_use: true }` that GCE refused with
    /// resourceInUseByAnotherResource: the check stays for the pools still using it. Not an
    /// error; the rest of the plan was built assuming the check goes, so the caller stops there
    /// and re-plans knowing it stays (`Observed::nodes_health_check_used_elsewhere`).
    KeptInUse,
}

/// Retry policy for GCE calls.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub min_delay: Duration,
    pub max_delay: Duration,
    pub max_times: usize,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            min_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(10),
            max_times: 8,
        }
    }
}

impl RetryPolicy {
    pub fn backoff(&self) -> ExponentialBuilder {
        ExponentialBuilder::default()
            .with_min_delay(self.min_delay)
            .with_max_delay(self.max_delay)
            .with_max_times(self.max_times)
            .with_jitter()
    }
}

/// Runs `op` with the rate limiter of its quota group in front and backon retries for retryable
/// errors.
pub async fn with_retries<T, F, Fut>(
    gce: &Gce,
    policy: &RetryPolicy,
    group: QuotaGroup,
    mut op: F,
) -> Result<T, GceError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, GceError>>,
{
    let limiter = gce.limiter(group);
    let attempt = || {
        let fut = op();
        async move {
            limiter.acquire().await;
            fut.await
        }
    };
    attempt
        .retry(policy.backoff())
        .sleep(tokio::time::sleep)
        .when(GceError::is_retryable)
        .notify(|err: &GceError, delay: Duration| {
            tracing::info!(%err, ?delay, "GCE call failed, backing off");
        })
        .await
}

/// [`with_retries`] for one mutation: the attempts share a requestId, so a retry after GCE already
/// accepted the call gets its operation back instead of a second mutation; an operation that ended
/// DONE with an error gets a new id for the next attempt ([`MutationId`]).
pub async fn with_mutation_retries<T, F, Fut>(
    gce: &Gce,
    policy: &RetryPolicy,
    mut op: F,
) -> Result<T, GceError>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Result<T, GceError>>,
{
    let id = MutationId::default();
    let id = &id;
    with_retries(gce, policy, QuotaGroup::Write, || {
        let fut = op(id.current());
        async move {
            let result = fut.await;
            if let Err(e) = &result {
                id.failed(e);
            }
            result
        }
    })
    .await
}

/// Executes one action (with retries). See the module docs for what counts as done.
pub async fn execute(gce: &Gce, policy: &RetryPolicy, action: &Action) -> Result<Outcome, GceError> {
    let call = format!("{} {}", action.label(), action.target_name());
    let call_ref = call.as_str();
    let result = with_mutation_retries(gce, policy, |rid| async move {
        call_once(gce, action, call_ref, &rid).await
    })
    .await;
    let outcome = outcome(action, result);
    match &outcome {
        Ok(Outcome::KeptInUse) => {
            tracing::info!(call = %call, "health check still used by another load balancer, kept")
        }
        Ok(_) => tracing::info!(call = %call, "GCE call done"),
        Err(_) => {}
    }
    count(gce, action.label(), &outcome);
    outcome
}

/// How the (final) result of an action's call counts; see the module docs.
pub fn outcome(action: &Action, result: Result<(), GceError>) -> Result<Outcome, GceError> {
    match result {
        Ok(()) => Ok(Outcome::Done),
        Err(e) if is_delete(action) && e.is_not_found() => Ok(Outcome::AlreadyDone),
        Err(e) if is_insert(action) && e.is_already_exists() => Ok(Outcome::AlreadyDone),
        Err(e) if keeps_if_in_use(action) && e.is_in_use() => Ok(Outcome::KeptInUse),
        Err(e) if membership_already(action, &e) => Ok(Outcome::AlreadyDone),
        Err(e) => Err(e),
    }
}

fn count(gce: &Gce, call: &str, outcome: &Result<Outcome, GceError>) {
    let result = match outcome {
        Ok(Outcome::Done) => "ok",
        Ok(Outcome::AlreadyDone) => "already_done",
        Ok(Outcome::KeptInUse) => "kept_in_use",
        Err(e) => e.metric_label(),
    };
    gce.metrics.gce_call(call, result);
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
            | Action::CreateBackendService(_)
    )
}

/// A JSON request body into a client model (for the small verb bodies).
fn body<M: serde::de::DeserializeOwned>(call: &str, v: serde_json::Value) -> Result<M, GceError> {
    serde_json::from_value(v).map_err(|e| GceError::new(call, format!("request body: {e}")))
}

/// Firewalls: PATCH when every list of the desired object is non-empty (a merge that replaces
/// them), PUT otherwise, because a PATCH cannot clear a list (empty lists are not sent).
fn patch_clears_nothing(fw: &Firewall) -> bool {
    !fw.source_ranges.is_empty()
        && !fw.destination_ranges.is_empty()
        && !fw.target_tags.is_empty()
        && !fw.allowed.is_empty()
}

async fn call_once(gce: &Gce, action: &Action, call: &str, rid: &str) -> Result<(), GceError> {
    let (p, r) = (gce.project.as_str(), gce.region.as_str());
    match action {
        Action::CreateAddress(a) => {
            let m: model::Address = to_model(call, a)?;
            let c = &gce.addresses;
            wait(
                gce,
                call,
                c.insert()
                    .set_project(p)
                    .set_region(r)
                    .set_body(m)
                    .set_request_id(rid)
                    .poller(),
            )
            .await?;
        }
        Action::DeleteAddress { name } => {
            let c = &gce.addresses;
            wait(
                gce,
                call,
                c.delete()
                    .set_project(p)
                    .set_region(r)
                    .set_address(name)
                    .set_request_id(rid)
                    .poller(),
            )
            .await?;
        }
        Action::CreateFirewall(f) => {
            let m: model::Firewall = to_model(call, f)?;
            let c = &gce.firewalls;
            wait(
                gce,
                call,
                c.insert().set_project(p).set_body(m).set_request_id(rid).poller(),
            )
            .await?;
        }
        Action::PatchFirewall(f) => {
            let m: model::Firewall = to_model(call, f)?;
            let c = &gce.firewalls;
            if patch_clears_nothing(f) {
                let req = c.patch().set_project(p).set_firewall(&f.name).set_body(m);
                wait(gce, call, req.set_request_id(rid).poller()).await?;
            } else {
                let req = c.update().set_project(p).set_firewall(&f.name).set_body(m);
                wait(gce, call, req.set_request_id(rid).poller()).await?;
            }
        }
        Action::DeleteFirewall { name } => {
            let c = &gce.firewalls;
            wait(
                gce,
                call,
                c.delete()
                    .set_project(p)
                    .set_firewall(name)
                    .set_request_id(rid)
                    .poller(),
            )
            .await?;
        }
        Action::CreateHealthCheck(h) => {
            let m: model::HttpHealthCheck = to_model(call, h)?;
            let c = &gce.http_health_checks;
            wait(
                gce,
                call,
                c.insert().set_project(p).set_body(m).set_request_id(rid).poller(),
            )
            .await?;
        }
        Action::UpdateHealthCheck(h) => {
            let m: model::HttpHealthCheck = to_model(call, h)?;
            let c = &gce.http_health_checks;
            let req = c
                .update()
                .set_project(p)
                .set_http_health_check(&h.name)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::DeleteHealthCheck { name, .. } => {
            let c = &gce.http_health_checks;
            let req = c.delete().set_project(p).set_http_health_check(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::CreateTargetPool(t) => {
            let m: model::TargetPool = to_model(call, t)?;
            let c = &gce.target_pools;
            wait(
                gce,
                call,
                c.insert()
                    .set_project(p)
                    .set_region(r)
                    .set_body(m)
                    .set_request_id(rid)
                    .poller(),
            )
            .await?;
        }
        Action::DeleteTargetPool { name } => {
            let c = &gce.target_pools;
            let req = c.delete().set_project(p).set_region(r).set_target_pool(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::AddInstances { pool, instances } => {
            let refs: Vec<_> = instances.iter().map(|i| json!({ "instance": i })).collect();
            let m: model::TargetPoolsAddInstanceRequest = body(call, json!({ "instances": refs }))?;
            let c = &gce.target_pools;
            let req = c
                .add_instance()
                .set_project(p)
                .set_region(r)
                .set_target_pool(pool)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::RemoveInstances { pool, instances } => {
            let refs: Vec<_> = instances.iter().map(|i| json!({ "instance": i })).collect();
            let m: model::TargetPoolsRemoveInstanceRequest = body(call, json!({ "instances": refs }))?;
            let c = &gce.target_pools;
            let req = c
                .remove_instance()
                .set_project(p)
                .set_region(r)
                .set_target_pool(pool)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::AddHealthCheck { pool, health_check } => {
            let m: model::TargetPoolsAddHealthCheckRequest =
                body(call, json!({ "healthChecks": [{ "healthCheck": health_check }] }))?;
            let c = &gce.target_pools;
            let req = c
                .add_health_check()
                .set_project(p)
                .set_region(r)
                .set_target_pool(pool)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::RemoveHealthCheck { pool, health_check } => {
            let m: model::TargetPoolsRemoveHealthCheckRequest =
                body(call, json!({ "healthChecks": [{ "healthCheck": health_check }] }))?;
            let c = &gce.target_pools;
            let req = c
                .remove_health_check()
                .set_project(p)
                .set_region(r)
                .set_target_pool(pool)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::CreateForwardingRule(f) => {
            let m: model::ForwardingRule = to_model(call, f)?;
            let c = &gce.forwarding_rules;
            wait(
                gce,
                call,
                c.insert()
                    .set_project(p)
                    .set_region(r)
                    .set_body(m)
                    .set_request_id(rid)
                    .poller(),
            )
            .await?;
        }
        Action::DeleteForwardingRule { name } => {
            let c = &gce.forwarding_rules;
            let req = c.delete().set_project(p).set_region(r).set_forwarding_rule(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::SetTarget {
            forwarding_rule,
            target,
        } => {
            let m: model::TargetReference = body(call, json!({ "target": target }))?;
            let c = &gce.forwarding_rules;
            let req = c
                .set_target()
                .set_project(p)
                .set_region(r)
                .set_forwarding_rule(forwarding_rule)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::CreateInstanceGroup { zone, name } => {
            let m: model::InstanceGroup = body(call, json!({ "name": name }))?;
            let c = &gce.instance_groups;
            let req = c.insert().set_project(p).set_zone(zone).set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::DeleteInstanceGroup { zone, name } => {
            let c = &gce.instance_groups;
            let req = c.delete().set_project(p).set_zone(zone).set_instance_group(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::AddGroupInstances {
            zone,
            group,
            instances,
        } => {
            let refs: Vec<_> = instances.iter().map(|i| json!({ "instance": i })).collect();
            let m: model::InstanceGroupsAddInstancesRequest = body(call, json!({ "instances": refs }))?;
            let c = &gce.instance_groups;
            let req = c
                .add_instances()
                .set_project(p)
                .set_zone(zone)
                .set_instance_group(group)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::RemoveGroupInstances {
            zone,
            group,
            instances,
        } => {
            let refs: Vec<_> = instances.iter().map(|i| json!({ "instance": i })).collect();
            let m: model::InstanceGroupsRemoveInstancesRequest = body(call, json!({ "instances": refs }))?;
            let c = &gce.instance_groups;
            let req = c
                .remove_instances()
                .set_project(p)
                .set_zone(zone)
                .set_instance_group(group)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::CreateHealthCheckV1(h) => {
            let m: model::HealthCheck = to_model(call, h)?;
            let c = &gce.health_checks;
            let req = c.insert().set_project(p).set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::UpdateHealthCheckV1(h) => {
            let m: model::HealthCheck = to_model(call, h)?;
            let c = &gce.health_checks;
            let req = c.update().set_project(p).set_health_check(&h.name).set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::DeleteHealthCheckV1 { name, .. } => {
            let c = &gce.health_checks;
            let req = c.delete().set_project(p).set_health_check(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::CreateBackendService(b) => {
            let m: model::BackendService = to_model(call, b)?;
            let c = &gce.region_backend_services;
            let req = c.insert().set_project(p).set_region(r).set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::UpdateBackendService(b) => {
            let m: model::BackendService = to_model(call, b)?;
            let c = &gce.region_backend_services;
            let req = c
                .update()
                .set_project(p)
                .set_region(r)
                .set_backend_service(&b.name)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::DeleteBackendService { name } => {
            let c = &gce.region_backend_services;
            let req = c.delete().set_project(p).set_region(r).set_backend_service(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
    }
    Ok(())
}

/// routes.insert (with retries; 409 = done).
pub async fn create_route(gce: &Gce, policy: &RetryPolicy, route: &Route) -> Result<Outcome, GceError> {
    let call = format!("create_route {}", route.name);
    let call_ref = call.as_str();
    let result = with_mutation_retries(gce, policy, |rid| async move {
        let m: model::Route = to_model(call_ref, route)?;
        let req = gce.routes.insert().set_project(&gce.project).set_body(m);
        wait(gce, call_ref, req.set_request_id(rid).poller())
            .await
            .map(|_| ())
    })
    .await;
    let outcome = match result {
        Ok(()) => Ok(Outcome::Done),
        Err(e) if e.is_already_exists() => Ok(Outcome::AlreadyDone),
        Err(e) => Err(e),
    };
    count(gce, "create_route", &outcome);
    outcome
}

/// routes.delete (with retries; 404 = done).
pub async fn delete_route(gce: &Gce, policy: &RetryPolicy, name: &str) -> Result<Outcome, GceError> {
    let call = format!("delete_route {name}");
    let call_ref = call.as_str();
    let result = with_mutation_retries(gce, policy, |rid| async move {
        let req = gce.routes.delete().set_project(&gce.project).set_route(name);
        wait(gce, call_ref, req.set_request_id(rid).poller())
            .await
            .map(|_| ())
    })
    .await;
    let outcome = match result {
        Ok(()) => Ok(Outcome::Done),
        Err(e) if e.is_not_found() => Ok(Outcome::AlreadyDone),
        Err(e) => Err(e),
    };
    count(gce, "delete_route", &outcome);
    outcome
}

#[cfg(test)]
mod tests;
