//! Executes one compute route against the state (called with the state lock held). The route
//! families live in the children: `insert` creates, `change` deletes, updates and runs custom verbs,
//! and `oplog` keeps the operation records.
mod change;
mod done;
mod input;
mod insert;
mod oplog;

use change::{custom_verb, delete, update};
use done::{Done, ok};
pub use input::ctx;
use insert::insert;
pub use insert::put_raw;
pub use oplog::find_op;

use crate::app::{App, Inner};
use crate::clock::now_ms;
use crate::errors::ApiError;
use crate::query::Params;
use crate::resources;
use crate::routes::Route;
use crate::{lists, scopes};

/// `op_fault`: the mutation is validated but not applied, and its operation ends with this error.
/// A mutation repeated with the same `requestId` returns the first call's operation (GCE's
/// idempotency contract for retries) instead of doing it again.
pub fn execute(
    app: &App,
    inner: &mut Inner,
    route: &Route,
    params: &Params,
    body: &[u8],
    op_fault: Option<ApiError>,
) -> Result<Done, ApiError> {
    let request_id = params
        .get("requestId")
        .filter(|r| !r.is_empty() && route.is_mutating());
    if let Some(rid) = request_id
        && let Some(op) = inner
            .data
            .operations
            .values()
            .find(|o| o.request_id.as_ref() == Some(rid))
    {
        return Ok(ok(op.render(&app.urls, now_ms())));
    }
    let done = execute_route(app, inner, route, params, body, op_fault)?;
    if let (Some(rid), Some(name)) = (request_id, done.body.as_ref().and_then(|b| b["name"].as_str()))
        && let Some(op) = inner.data.operations.get_mut(name)
    {
        op.request_id = Some(rid.clone());
    }
    Ok(done)
}

fn execute_route(
    app: &App,
    inner: &mut Inner,
    route: &Route,
    params: &Params,
    body: &[u8],
    op_fault: Option<ApiError>,
) -> Result<Done, ApiError> {
    match route {
        Route::Project => Ok(ok(scopes::project(app, inner))),
        Route::ScopeList(t) => Ok(ok(scopes::scope_list(app, inner, *t))),
        Route::ScopeGet(s) => Ok(ok(scopes::scope_get(app, inner, s))),
        Route::List(kind, scope) => lists::list(app, inner, *kind, scope, params).map(ok),
        Route::Aggregated(kind) => lists::aggregated(app, inner, *kind, params).map(ok),
        Route::Get(kind, scope, name) => inner
            .data
            .resources
            .get(*kind, scope, name)
            .map(resources::public)
            .map(ok)
            .ok_or_else(|| ApiError::not_found(&app.urls.rel(scope, kind.collection(), name))),
        Route::Insert(kind, scope) => insert(app, inner, *kind, scope, body, op_fault),
        Route::Delete(kind, scope, name) => delete(app, inner, *kind, scope, name, op_fault),
        Route::Patch(kind, scope, name) => update(app, inner, *kind, scope, name, body, true, op_fault),
        Route::Update(kind, scope, name) => update(app, inner, *kind, scope, name, body, false, op_fault),
        Route::Verb(kind, scope, name, verb) => {
            custom_verb(app, inner, *kind, scope, name, verb, body, op_fault)
        }
        Route::OpList(scope) => lists::op_list(app, inner, Some(scope), params).map(ok),
        Route::AggregatedOps => lists::op_list(app, inner, None, params).map(ok),
        Route::OpGet(scope, name) | Route::OpWait(scope, name) => {
            let op = find_op(app, inner, scope, name)?;
            Ok(ok(op.render(&app.urls, now_ms())))
        }
        Route::OpDelete(scope, name) => {
            find_op(app, inner, scope, name)?;
            inner.data.operations.remove(name);
            Ok(Done {
                status: 204,
                body: None,
                mutated: true,
            })
        }
    }
}
