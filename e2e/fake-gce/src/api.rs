//! One Compute API call: rate limit, faults, routing, execution, call log, persistence.
//! Used by the HTTP server and by each part of a batch.
use serde_json::Value;

use crate::app::App;
use crate::calls::CallRecord;
use crate::clock::now_ms;
use crate::crud;
use crate::errors::ApiError;
use crate::faults::FaultMode;
use crate::query::{Params, parse_query};
use crate::routes::{self, Route};

/// How long `operations/NAME/wait` blocks at most before answering with the current state.
const MAX_WAIT_MS: u64 = 3_000;

pub struct Reply {
    pub status: u16,
    pub body: Option<Value>,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body: Some(body),
        }
    }
    pub fn error(e: &ApiError) -> Self {
        Self::json(e.code, e.to_json())
    }
}

pub async fn call(app: &App, method: &str, path: &str, query: &str, body: &[u8], batch: bool) -> Reply {
    let params = parse_query(query);
    let route = routes::parse(&app.cfg, method, path);
    let mutating = route.as_ref().is_ok_and(Route::is_mutating);
    let reply = dispatch(app, method, path, route, &params, body, mutating).await;
    let mut inner = app.lock();
    inner.calls.push(CallRecord {
        seq: 0,
        time_ms: now_ms(),
        method: method.to_ascii_uppercase(),
        path: path.to_string(),
        query: query.to_string(),
        status: reply.status,
        mutating,
        batch,
    });
    reply
}

async fn dispatch(
    app: &App,
    method: &str,
    path: &str,
    route: Result<Route, ApiError>,
    params: &Params,
    body: &[u8],
    mutating: bool,
) -> Reply {
    let decision = {
        let mut inner = app.lock();
        if !inner.rate.admit(now_ms()) {
            return Reply::error(&ApiError::rate_limited());
        }
        inner.faults.decide(method, path, mutating)
    };
    if decision.delay_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(decision.delay_ms)).await;
    }
    let mut op_fault = None;
    match decision.error {
        Some((e, FaultMode::Http)) => return Reply::error(&e),
        Some((e, FaultMode::Operation)) => op_fault = Some(e),
        None => {}
    }
    let route = match route {
        Ok(r) => r,
        Err(e) => return Reply::error(&e),
    };
    if let Route::OpWait(scope, name) = &route {
        let done_ms = {
            let inner = app.lock();
            match crud::find_op(app, &inner, scope, name) {
                Ok(op) => op.done_ms(),
                Err(e) => return Reply::error(&e),
            }
        };
        let wait = done_ms.saturating_sub(now_ms()).min(MAX_WAIT_MS);
        if wait > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
        }
    }
    let (reply, snapshot) = {
        let mut inner = app.lock();
        match crud::execute(app, &mut inner, &route, params, body, op_fault) {
            Ok(done) => {
                let snap = (done.mutated && app.cfg.state_file.is_some())
                    .then(|| crate::persist::snapshot(app, &inner));
                (
                    Reply {
                        status: done.status,
                        body: done.body,
                    },
                    snap,
                )
            }
            Err(e) => (Reply::error(&e), None),
        }
    };
    if let (Some(snap), Some(file)) = (snapshot, &app.cfg.state_file)
        && let Err(e) = crate::persist::save(file, &snap)
    {
        tracing::warn!(error = %e, "cannot save state file");
    }
    reply
}
