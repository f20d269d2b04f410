//! Test-only admin API under `/_fake/` (JSON in, JSON out). See README.md for the contract.
use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::App;
use crate::crud;
use crate::errors::ApiError;
use crate::faults::FaultSpec;
use crate::kind::Kind;
use crate::resources::{Ctx, instances};
use crate::scope::Scope;
use crate::store::key;

pub struct AdminReply {
    pub status: u16,
    pub body: Value,
}

fn ok(body: Value) -> Result<AdminReply, ApiError> {
    Ok(AdminReply { status: 200, body })
}

fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::parse_error(&e.to_string()))
}

pub fn handle(app: &App, method: &str, path: &str, query: &str, body: &[u8]) -> AdminReply {
    match route(app, method, path, query, body) {
        Ok(r) => {
            if method != "GET" {
                save(app);
            }
            r
        }
        Err(e) => AdminReply {
            status: e.code,
            body: e.to_json(),
        },
    }
}

fn save(app: &App) {
    let Some(file) = &app.cfg.state_file else { return };
    let snap = crate::persist::snapshot(app, &app.lock());
    if let Err(e) = crate::persist::save(file, &snap) {
        tracing::warn!(error = %e, "cannot save state file");
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Latency {
    ms: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Rate {
    per_second: Option<u32>,
}

fn route(app: &App, method: &str, path: &str, query: &str, body: &[u8]) -> Result<AdminReply, ApiError> {
    let segs: Vec<&str> = path
        .trim_start_matches("/_fake/")
        .trim_end_matches('/')
        .split('/')
        .collect();
    match (method, segs.as_slice()) {
        ("GET", ["healthz"]) => ok(json!({"ok": true})),
        ("GET", ["state"]) => ok(crate::persist::snapshot(app, &app.lock())),
        ("POST", ["reset"]) => {
            reset(app);
            ok(json!({"reset": true}))
        }
        ("POST", ["instances"]) => add_instance(app, body),
        ("DELETE", ["instances", zone, name]) => remove_instance(app, zone, name),
        ("GET", ["op-latency"]) => ok(json!({"ms": app.lock().op_latency_ms})),
        ("POST", ["op-latency"]) => {
            let l: Latency = parse(body)?;
            app.lock().op_latency_ms = l.ms;
            ok(json!({"ms": l.ms}))
        }
        ("GET", ["faults"]) => ok(app.lock().faults.to_json()),
        ("POST", ["faults"]) => {
            let spec: FaultSpec = parse(body)?;
            let id = app.lock().faults.add(spec)?;
            ok(json!({"id": id}))
        }
        ("DELETE", ["faults"]) => {
            app.lock().faults.clear();
            ok(json!({"faults": []}))
        }
        ("GET", ["quotas"]) => ok(json!(app.lock().quotas)),
        ("POST", ["quotas"]) => set_quotas(app, body),
        ("GET", ["rate-limit"]) => ok(json!({"perSecond": app.lock().rate.per_second})),
        ("POST", ["rate-limit"]) => {
            let r: Rate = parse(body)?;
            app.lock().rate.set(r.per_second);
            ok(json!({"perSecond": r.per_second}))
        }
        ("GET", ["calls"]) => calls(app, query),
        ("DELETE", ["calls"]) => {
            app.lock().calls.clear();
            ok(json!({"calls": []}))
        }
        _ => Err(ApiError::not_found(path)),
    }
}

/// `POST /_fake/instances`: creates or replaces an instance from a spec; the compute API does not
/// create instances.
fn add_instance(app: &App, body: &[u8]) -> Result<AdminReply, ApiError> {
    let spec: instances::InstanceSpec = parse(body)?;
    let mut inner = app.lock();
    let obj = {
        let ctx = Ctx {
            cfg: &app.cfg,
            urls: &app.urls,
            res: &inner.data.resources,
        };
        instances::from_spec(&ctx, &spec)?
    };
    let scope = Scope::Zone(spec.zone.clone());
    let obj = obj.as_object().cloned().unwrap_or_default();
    ok(crud::put_raw(app, &mut inner, Kind::Instance, &scope, obj))
}

/// `DELETE /_fake/instances/ZONE/NAME`: answers with the removed instance.
fn remove_instance(app: &App, zone: &str, name: &str) -> Result<AdminReply, ApiError> {
    let scope = Scope::Zone(zone.to_string());
    let mut inner = app.lock();
    match inner
        .data
        .resources
        .map_mut(Kind::Instance)
        .remove(&key(&scope, name))
    {
        Some(v) => ok(v),
        None => Err(ApiError::not_found(&app.urls.rel(&scope, "instances", name))),
    }
}

/// `POST /_fake/quotas`: a number sets a metric's limit, null removes it.
fn set_quotas(app: &App, body: &[u8]) -> Result<AdminReply, ApiError> {
    let q: serde_json::Map<String, Value> = parse(body)?;
    let mut inner = app.lock();
    for (metric, limit) in q {
        match limit.as_u64() {
            Some(l) => {
                inner.quotas.insert(metric, l);
            }
            None if limit.is_null() => {
                inner.quotas.remove(&metric);
            }
            None => {
                return Err(ApiError::invalid_field(
                    &metric,
                    &limit.to_string(),
                    "Must be a number or null.",
                ));
            }
        }
    }
    ok(json!(inner.quotas))
}

/// `GET /_fake/calls`, optionally narrowed by `method` and `pathRegex`.
fn calls(app: &App, query: &str) -> Result<AdminReply, ApiError> {
    let params = crate::query::parse_query(query);
    let re = match params.get("pathRegex") {
        Some(r) => {
            Some(regex::Regex::new(r).map_err(|e| ApiError::invalid_field("pathRegex", r, &e.to_string()))?)
        }
        None => None,
    };
    ok(app
        .lock()
        .calls
        .to_json(params.get("method").map(String::as_str), re.as_ref()))
}

/// Back to a fresh project: only the `default` network; knobs back to their start values.
pub fn reset(app: &App) {
    let mut inner = app.lock();
    inner.data = crate::store::Data::default();
    seed(app, &mut inner);
    inner.op_latency_ms = app.cfg.op_latency_ms;
    inner.faults.clear();
    inner.rate.set(None);
    inner.quotas.clear();
    inner.calls.clear();
}

/// Creates what a new GCE project has: the `default` network and its subnetwork in the region.
pub fn seed(app: &App, inner: &mut crate::app::Inner) {
    if inner
        .data
        .resources
        .get(Kind::Network, &Scope::Global, "default")
        .is_none()
    {
        crud::put_raw(
            app,
            inner,
            Kind::Network,
            &Scope::Global,
            crate::resources::networks::default_network(),
        );
    }
    let region = Scope::Region(app.cfg.region.clone());
    if inner
        .data
        .resources
        .get(Kind::Subnetwork, &region, "default")
        .is_none()
    {
        let sub = crate::resources::subnetworks::default_subnetwork(&crud::ctx(app, inner));
        crud::put_raw(app, inner, Kind::Subnetwork, &region, sub);
    }
}
