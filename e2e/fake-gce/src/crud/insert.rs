//! Creating resources: `insert` from a client (validated and quota-checked) and `put_raw` for the
//! objects the fake builds itself.
use serde_json::{Map, Value, json};

use super::done::Done;
use super::input::{ctx, parse_object};
use super::oplog::new_op;
use crate::app::{App, Inner};
use crate::clock::{now_ms, rfc3339};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::resources;
use crate::scope::{Scope, ScopeType};
use crate::store::key;

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

pub fn insert(
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
