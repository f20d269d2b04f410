//! Executes one compute route against the state (called with the state lock held).
use serde_json::{Map, Value, json};

use crate::app::{App, Inner};
use crate::clock::{now_ms, rfc3339};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::operations::Operation;
use crate::query::Params;
use crate::resources::{self, Ctx};
use crate::routes::Route;
use crate::scope::{Scope, ScopeType};
use crate::store::key;
use crate::{lists, scopes};

/// A successful answer: status, JSON body (None = empty), and whether resources changed.
pub struct Done {
    pub status: u16,
    pub body: Option<Value>,
    pub mutated: bool,
}

fn ok(body: Value) -> Done {
    Done {
        status: 200,
        body: Some(body),
        mutated: false,
    }
}

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

fn parse_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::parse_error("Expected a JSON object.")),
        Err(e) => Err(ApiError::parse_error(&e.to_string())),
    }
}

fn ctx<'a>(app: &'a App, inner: &'a Inner) -> Ctx<'a> {
    Ctx {
        cfg: &app.cfg,
        urls: &app.urls,
        res: &inner.data.resources,
    }
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

fn check_quota(app: &App, inner: &Inner, kind: Kind) -> Result<(), ApiError> {
    let Some(metric) = kind.quota_metric() else {
        return Ok(());
    };
    let Some(limit) = inner.quotas.get(metric).copied() else {
        return Ok(());
    };
    if inner.data.resources.count(kind) as u64 >= limit {
        let where_ = match kind.scope_type() {
            ScopeType::Global => "globally".to_string(),
            _ => format!("in region {}", app.cfg.region),
        };
        return Err(ApiError::quota(metric, limit, &where_));
    }
    Ok(())
}

/// Output-only fields every resource carries.
fn stamp(
    app: &App,
    kind: Kind,
    scope: &Scope,
    name: &str,
    id: &str,
    created: u64,
    obj: &mut Map<String, Value>,
) {
    obj.insert("kind".into(), json!(kind.kind_str()));
    obj.insert("id".into(), json!(id));
    obj.insert("creationTimestamp".into(), json!(rfc3339(created)));
    obj.insert("name".into(), json!(name));
    obj.insert("selfLink".into(), json!(app.urls.link(scope, kind, name)));
    match scope {
        Scope::Region(_) => {
            obj.insert("region".into(), json!(app.urls.scope_link(scope)));
        }
        Scope::Zone(_) => {
            obj.insert("zone".into(), json!(app.urls.scope_link(scope)));
        }
        Scope::Global => {}
    }
}

fn insert(
    app: &App,
    inner: &mut Inner,
    kind: Kind,
    scope: &Scope,
    body: &[u8],
    op_fault: Option<ApiError>,
) -> Result<Done, ApiError> {
    let mut obj = parse_object(body)?;
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::required("resource.name"))?
        .to_string();
    crate::validate::name("resource.name", &name)?;
    if inner.data.resources.get(kind, scope, &name).is_some() {
        return Err(ApiError::already_exists(&app.urls.rel(
            scope,
            kind.collection(),
            &name,
        )));
    }
    check_quota(app, inner, kind)?;
    // Output-only fields sent by a client are ignored, as GCE does.
    for f in ["id", "selfLink", "creationTimestamp", "kind", "region", "zone"] {
        obj.remove(f);
    }
    // Region must be known before prepare so address users can be matched.
    if let Scope::Region(_) = scope {
        obj.insert("region".into(), json!(app.urls.scope_link(scope)));
    }
    let mut obj = resources::prepare(&ctx(app, inner), kind, scope, obj, None)?;
    let link = app.urls.link(scope, kind, &name);
    if let Some(err) = op_fault {
        let op = new_op(app, inner, scope, "insert", &link, "0", Some(err));
        return Ok(Done {
            status: 200,
            body: Some(op),
            mutated: false,
        });
    }
    let id = inner.data.new_id();
    stamp(app, kind, scope, &name, &id, now_ms(), &mut obj);
    inner
        .data
        .resources
        .map_mut(kind)
        .insert(key(scope, &name), Value::Object(obj));
    resources::refresh(&mut inner.data.resources);
    let op = new_op(app, inner, scope, "insert", &link, &id, None);
    Ok(Done {
        status: 200,
        body: Some(op),
        mutated: true,
    })
}

/// Inserts an object built elsewhere (the `default` network, admin instances); upserts.
pub fn put_raw(
    app: &App,
    inner: &mut Inner,
    kind: Kind,
    scope: &Scope,
    mut obj: Map<String, Value>,
) -> Value {
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let existing = inner.data.resources.get(kind, scope, &name).cloned();
    let (id, created) = match &existing {
        Some(e) => (e["id"].as_str().unwrap_or_default().to_string(), None),
        None => (inner.data.new_id(), Some(now_ms())),
    };
    stamp(
        app,
        kind,
        scope,
        &name,
        &id,
        created.unwrap_or_else(now_ms),
        &mut obj,
    );
    if let Some(e) = existing {
        obj.insert("creationTimestamp".into(), e["creationTimestamp"].clone());
    }
    let v = Value::Object(obj);
    inner
        .data
        .resources
        .map_mut(kind)
        .insert(key(scope, &name), v.clone());
    resources::refresh(&mut inner.data.resources);
    v
}

fn existing(app: &App, inner: &Inner, kind: Kind, scope: &Scope, name: &str) -> Result<Value, ApiError> {
    inner
        .data
        .resources
        .get(kind, scope, name)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&app.urls.rel(scope, kind.collection(), name)))
}

fn delete(
    app: &App,
    inner: &mut Inner,
    kind: Kind,
    scope: &Scope,
    name: &str,
    op_fault: Option<ApiError>,
) -> Result<Done, ApiError> {
    let cur = existing(app, inner, kind, scope, name)?;
    if kind == Kind::Instance {
        return Err(ApiError::new(
            400,
            "unsupported",
            "instances.delete is not served by svcnet-fake-gce; use DELETE /_fake/instances/{zone}/{name}",
        ));
    }
    if let Some(user) = resources::first_user(&inner.data.resources, kind, &cur) {
        let rel = |l: &str| l.find("projects/").map_or(l.to_string(), |i| l[i..].to_string());
        return Err(ApiError::in_use(
            kind.noun(),
            &app.urls.rel(scope, kind.collection(), name),
            &rel(&user),
        ));
    }
    let link = app.urls.link(scope, kind, name);
    let id = cur["id"].as_str().unwrap_or_default().to_string();
    if op_fault.is_none() {
        inner.data.resources.map_mut(kind).remove(&key(scope, name));
        resources::refresh(&mut inner.data.resources);
    }
    let mutated = op_fault.is_none();
    let op = new_op(app, inner, scope, "delete", &link, &id, op_fault);
    Ok(Done {
        status: 200,
        body: Some(op),
        mutated,
    })
}

#[allow(clippy::too_many_arguments)]
fn update(
    app: &App,
    inner: &mut Inner,
    kind: Kind,
    scope: &Scope,
    name: &str,
    body: &[u8],
    patch: bool,
    op_fault: Option<ApiError>,
) -> Result<Done, ApiError> {
    if !resources::updatable(kind) {
        return Err(ApiError::new(
            405,
            "methodNotAllowed",
            format!("{} cannot be patched or updated", kind.collection()),
        ));
    }
    let cur = existing(app, inner, kind, scope, name)?;
    let body = parse_object(body)?;
    if let Some(n) = body.get("name").and_then(Value::as_str)
        && n != name
    {
        return Err(ApiError::invalid_field(
            "resource.name",
            n,
            "The name cannot be changed.",
        ));
    }
    let mut obj = if patch {
        cur.as_object().cloned().unwrap_or_default()
    } else {
        Map::new()
    };
    for (k, v) in body {
        if v.is_null() {
            obj.remove(&k);
        } else {
            obj.insert(k, v);
        }
    }
    for f in ["id", "selfLink", "creationTimestamp", "kind", "name"] {
        obj.insert(f.into(), cur[f].clone());
    }
    let obj = resources::prepare(&ctx(app, inner), kind, scope, obj, Some(&cur))?;
    let link = app.urls.link(scope, kind, name);
    let id = cur["id"].as_str().unwrap_or_default().to_string();
    let op_type = if patch { "patch" } else { "update" };
    let mutated = op_fault.is_none();
    if mutated {
        inner
            .data
            .resources
            .map_mut(kind)
            .insert(key(scope, name), Value::Object(obj));
        resources::refresh(&mut inner.data.resources);
    }
    let op = new_op(app, inner, scope, op_type, &link, &id, op_fault);
    Ok(Done {
        status: 200,
        body: Some(op),
        mutated,
    })
}

#[allow(clippy::too_many_arguments)]
fn custom_verb(
    app: &App,
    inner: &mut Inner,
    kind: Kind,
    scope: &Scope,
    name: &str,
    verb: &str,
    body: &[u8],
    op_fault: Option<ApiError>,
) -> Result<Done, ApiError> {
    let cur = existing(app, inner, kind, scope, name)?;
    if kind == Kind::InstanceGroup && resources::read_only_verb(verb) {
        return Ok(ok(resources::instance_groups::list_instances(
            &ctx(app, inner),
            &cur,
        )));
    }
    let body = Value::Object(parse_object(body)?);
    let next = resources::verb(&ctx(app, inner), kind, &cur, verb, &body)?;
    let link = app.urls.link(scope, kind, name);
    let id = cur["id"].as_str().unwrap_or_default().to_string();
    let mutated = op_fault.is_none();
    if mutated {
        inner.data.resources.map_mut(kind).insert(key(scope, name), next);
        resources::refresh(&mut inner.data.resources);
    }
    let op = new_op(app, inner, scope, verb, &link, &id, op_fault);
    Ok(Done {
        status: 200,
        body: Some(op),
        mutated,
    })
}
