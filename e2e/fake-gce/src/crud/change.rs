//! Changing existing resources: delete, patch or update, and the custom verbs (`setTarget`,
//! `addInstances`, ...).
use serde_json::{Map, Value};

use super::done::{Done, ok};
use super::input::{ctx, parse_object};
use super::oplog::new_op;
use crate::app::{App, Inner};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::resources;
use crate::scope::Scope;
use crate::store::key;

fn existing(app: &App, inner: &Inner, kind: Kind, scope: &Scope, name: &str) -> Result<Value, ApiError> {
    inner
        .data
        .resources
        .get(kind, scope, name)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&app.urls.rel(scope, kind.collection(), name)))
}

pub fn delete(
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
pub fn update(
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
pub fn custom_verb(
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
