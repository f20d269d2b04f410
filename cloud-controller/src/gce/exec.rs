//! Executes the domain's [`Action`]s with the official client: one call per action (`calls`),
//! waiting for its operation, retried (`retry`: every mutating call carries a `requestId`, the
//! same for all attempts of one action until its operation ends DONE with an error; every attempt
//! takes a token of its quota group), its answer classified (`outcome`: 404 on delete / 409 on
//! insert = done, in use = kept) and counted in the metrics.

use google_cloud_compute_v1::model;

use crate::gce::calls::call_once;
use crate::gce::client::Gce;
use crate::gce::convert::to_model;
use crate::gce::error::GceError;
use crate::gce::ops::wait;
use crate::gce::outcome::{Outcome, outcome};
use crate::gce::retry::{RetryPolicy, with_mutation_retries};
use crate::objects::Route;
use crate::objects::action::Action;

/// Executes one action (with retries). See the module docs for what counts as done.
pub(crate) async fn execute(gce: &Gce, policy: &RetryPolicy, action: &Action) -> Result<Outcome, GceError> {
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

fn count(gce: &Gce, call: &str, outcome: &Result<Outcome, GceError>) {
    let result = match outcome {
        Ok(Outcome::Done) => "ok",
        Ok(Outcome::AlreadyDone) => "already_done",
        Ok(Outcome::KeptInUse) => "kept_in_use",
        Err(e) => e.metric_label(),
    };
    gce.metrics.gce_call(call, result);
}

/// routes.insert (with retries; 409 = done).
pub(crate) async fn create_route(
    gce: &Gce,
    policy: &RetryPolicy,
    route: &Route,
) -> Result<Outcome, GceError> {
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
pub(crate) async fn delete_route(gce: &Gce, policy: &RetryPolicy, name: &str) -> Result<Outcome, GceError> {
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
