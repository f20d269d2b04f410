//! The project's operation records: every accepted mutation adds one, and the operation routes
//! read them back.
use serde_json::Value;

use crate::app::{App, Inner};
use crate::clock::now_ms;
use crate::errors::ApiError;
use crate::operations::Operation;
use crate::scope::Scope;

pub fn find_op<'a>(
    app: &App,
    inner: &'a Inner,
    scope: &Scope,
    name: &str,
) -> Result<&'a Operation, ApiError> {
    inner
        .data
        .operations
        .get(name)
        .filter(|op| op.scope == scope.path())
        .ok_or_else(|| ApiError::not_found(&app.urls.rel(scope, "operations", name)))
}

/// Creates an operation for a mutation of `target_link` and renders it.
pub fn new_op(
    app: &App,
    inner: &mut Inner,
    scope: &Scope,
    op_type: &str,
    target_link: &str,
    target_id: &str,
    error: Option<ApiError>,
) -> Value {
    let id = inner.data.new_id();
    let now = now_ms();
    let name = format!("operation-{now}-{:x}", inner.data.next_id);
    let op = Operation {
        name: name.clone(),
        id,
        scope: scope.path(),
        operation_type: op_type.to_string(),
        target_link: target_link.to_string(),
        target_id: target_id.to_string(),
        insert_ms: now,
        latency_ms: inner.op_latency_ms,
        error,
        request_id: None,
    };
    let rendered = op.render(&app.urls, now);
    inner.data.operations.insert(name, op);
    rendered
}
