//! HTTP wiring: discovery routes, the `/api` and `/apis` resource paths, and the test hooks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::{Value, json};

use crate::discovery;
use crate::error::ApiError;
use crate::http_util::{content_type, json_response, parse_query, wants_metadata, wants_table};
use crate::list::{self, Filter, present};
use crate::ops::{self, WriteOpts};
use crate::patch::PatchType;
use crate::resources::ResourceType;
use crate::store::Store;
use crate::table::{self, Include};
use crate::watch::{self, WatchRequest};

#[derive(Clone)]
pub struct App {
    pub store: Arc<Store>,
    pub addr: SocketAddr,
    pub bookmark_every: Duration,
}

pub fn router(app: App) -> Router {
    Router::new()
        .route(
            "/version",
            get(|| async { json_response(StatusCode::OK, &discovery::version()) }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }))
        .route("/api", get(api_root))
        .route("/apis", get(apis_root))
        .route(
            "/openapi/v2",
            get(|| async { ApiError::not_found_path("/openapi/v2").into_response() }),
        )
        .route("/openapi/v3", get(openapi_root))
        .route("/openapi/v3/{*rest}", get(openapi_gv))
        .route("/_svcnet/compact", post(compact))
        .route("/api/{*rest}", any(core_api))
        .route("/apis/{*rest}", any(group_api))
        .fallback(|uri: Uri| async move { ApiError::not_found_path(uri.path()).into_response() })
        .with_state(app)
}

async fn api_root(State(app): State<App>) -> Response {
    json_response(StatusCode::OK, &discovery::api_versions(&app.addr.to_string()))
}

async fn apis_root(State(app): State<App>) -> Response {
    let reg = app.store.lock().registry.clone();
    json_response(StatusCode::OK, &discovery::api_group_list(&reg))
}

async fn openapi_root(State(app): State<App>) -> Response {
    let reg = app.store.lock().registry.clone();
    json_response(StatusCode::OK, &crate::openapi::root(&reg))
}

async fn openapi_gv(State(app): State<App>, uri: Uri) -> Response {
    let reg = app.store.lock().registry.clone();
    let segs: Vec<&str> = uri.path().trim_start_matches("/openapi/v3/").split('/').collect();
    let doc = match segs.as_slice() {
        ["api", v] => crate::openapi::group_version(&reg, "", v),
        ["apis", g, v] => crate::openapi::group_version(&reg, g, v),
        _ => None,
    };
    match doc {
        Some(d) => json_response(StatusCode::OK, &d),
        None => ApiError::not_found_path(uri.path()).into_response(),
    }
}

/// Test hook: drop the watch history and close all watches (clients then see 410 and relist).
async fn compact(State(app): State<App>) -> Response {
    let rv = app.store.compact();
    json_response(StatusCode::OK, &json!({"compactedTo": rv.to_string()}))
}

struct Req {
    method: Method,
    headers: HeaderMap,
    query: std::collections::HashMap<String, String>,
    body: Bytes,
    path: String,
}

async fn core_api(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let segs: Vec<String> = path
        .trim_start_matches("/api/")
        .split('/')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let req = Req {
        method,
        headers,
        query: parse_query(q.as_deref()),
        body,
        path,
    };
    let Some((version, rest)) = segs.split_first() else {
        return api_root(State(app)).await;
    };
    respond(resource_request(&app, "", version, rest, req))
}

async fn group_api(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let segs: Vec<String> = path
        .trim_start_matches("/apis/")
        .split('/')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let req = Req {
        method,
        headers,
        query: parse_query(q.as_deref()),
        body,
        path,
    };
    match segs.as_slice() {
        [] => apis_root(State(app)).await,
        [group] => {
            let reg = app.store.lock().registry.clone();
            respond(
                discovery::api_group(&reg, group)
                    .ok_or_else(|| ApiError::not_found_path(&req.path))
                    .map(ok),
            )
        }
        [group, version, rest @ ..] => respond(resource_request(&app, group, version, rest, req)),
    }
}

fn ok(v: Value) -> Response {
    json_response(StatusCode::OK, &v)
}

fn respond(r: Result<Response, ApiError>) -> Response {
    r.unwrap_or_else(IntoResponse::into_response)
}

/// Where a resource path points.
struct Target {
    rt: ResourceType,
    ns: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

fn resolve(app: &App, group: &str, version: &str, rest: &[String], path: &str) -> Result<Target, ApiError> {
    let reg = app.store.lock().registry.clone();
    let find = |res: &str| reg.find(group, version, res).cloned();
    let nf = || ApiError::not_found_path(path);
    let namespaced_path =
        rest.len() >= 3 && rest[0] == "namespaces" && find(&rest[2]).is_some_and(|t| t.namespaced);
    let (ns, rest) = if namespaced_path {
        (Some(rest[1].clone()), &rest[2..])
    } else {
        (None, rest)
    };
    let rt = find(rest.first().ok_or_else(nf)?).ok_or_else(nf)?;
    if rest.len() > 3 || (rt.namespaced && ns.is_none() && rest.len() > 1) {
        return Err(nf());
    }
    let sub = rest.get(2).cloned();
    if let Some(s) = &sub
        && (s != "status" || !rt.status)
    {
        return Err(nf());
    }
    Ok(Target {
        rt,
        ns,
        name: rest.get(1).cloned(),
        sub,
    })
}

fn resource_request(
    app: &App,
    group: &str,
    version: &str,
    rest: &[String],
    req: Req,
) -> Result<Response, ApiError> {
    if rest.is_empty() {
        let reg = app.store.lock().registry.clone();
        return discovery::resource_list(&reg, group, version)
            .map(ok)
            .ok_or_else(|| ApiError::not_found_path(&req.path));
    }
    let t = resolve(app, group, version, rest, &req.path)?;
    let q = &req.query;
    let dry_run = q.get("dryRun").is_some_and(|v| v == "All");
    let opts = WriteOpts {
        dry_run,
        field_manager: q.get("fieldManager").cloned(),
        force: q.get("force").is_some_and(|v| v == "true"),
        subresource: t.sub.clone(),
    };
    let ns = t.ns.clone().unwrap_or_default();
    let table = wants_table(&req.headers).then(|| Include::from_query(q.get("includeObject")));
    let metadata_only = table.is_none() && wants_metadata(&req.headers);
    let rt = &t.rt;
    match (&req.method, &t.name) {
        (&Method::GET, None) => {
            let filter = Filter::from_query(t.ns.clone(), q)?;
            if q.get("watch").is_some_and(|w| w == "true" || w == "1") {
                let mut wr = WatchRequest::from_query(rt.clone(), filter, q, table);
                wr.metadata_only = metadata_only;
                return watch::start(app.store.clone(), wr, app.bookmark_every);
            }
            let (items, meta) = list::list(&app.store.lock(), rt, &filter, q)?;
            Ok(match table {
                Some(inc) => ok(table::table(rt, &items, meta, inc)),
                None if metadata_only => ok(json!({
                    "kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                    "items": items.iter().map(table::partial).collect::<Vec<_>>(),
                })),
                None => ok(list::list_object(rt, items, meta)),
            })
        }
        (&Method::GET, Some(name)) => {
            let obj = present(rt, &ops::get(&app.store.lock(), rt, &ns, name)?);
            Ok(match table {
                Some(inc) => {
                    let meta = json!({"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned()});
                    ok(table::table(rt, std::slice::from_ref(&obj), meta, inc))
                }
                None if metadata_only => ok(table::partial(&obj)),
                None => ok(obj),
            })
        }
        (&Method::POST, None) => {
            if rt.namespaced && t.ns.is_none() {
                return Err(ApiError::method_not_allowed(
                    "POST to a namespaced resource needs a namespace in the path",
                ));
            }
            let body = json_body(&req)?;
            let created = app
                .store
                .write(|inner| ops::create(inner, rt, &ns, body, &opts))?;
            Ok(json_response(StatusCode::CREATED, &present(rt, &created)))
        }
        (&Method::PUT, Some(name)) => {
            let body = json_body(&req)?;
            let updated = app
                .store
                .write(|inner| ops::update(inner, rt, &ns, name, body, &opts))?;
            Ok(ok(present(rt, &updated)))
        }
        (&Method::PATCH, Some(name)) => {
            let ct = content_type(&req.headers);
            let ptype = PatchType::from_content_type(&ct)
                .ok_or_else(|| ApiError::unsupported_media(format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {ct})")))?;
            let patched = app
                .store
                .write(|inner| ops::patch(inner, rt, &ns, name, ptype, &req.body, &opts))?;
            Ok(ok(present(rt, &patched)))
        }
        (&Method::DELETE, Some(name)) => {
            let options = delete_options(&req)?;
            let deleted = app
                .store
                .write(|inner| ops::delete(inner, rt, &ns, name, &options, dry_run))?;
            Ok(ok(present(rt, &deleted)))
        }
        (&Method::DELETE, None) => {
            let filter = Filter::from_query(t.ns.clone(), q)?;
            let options = delete_options(&req)?;
            let removed = app.store.write(|inner| -> Result<Vec<Value>, ApiError> {
                let (items, _) = list::list(inner, rt, &filter, &Default::default())?;
                let mut out = Vec::new();
                for o in items {
                    let ons = o
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    let oname = o
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    out.push(present(
                        rt,
                        &ops::delete(inner, rt, &ons, &oname, &options, dry_run)?,
                    ));
                }
                Ok(out)
            })?;
            let rv = app.store.lock().rv;
            Ok(ok(list::list_object(
                rt,
                removed,
                json!({"resourceVersion": rv.to_string()}),
            )))
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "{} is not supported on {}",
            req.method, req.path
        ))),
    }
}

fn json_body(req: &Req) -> Result<Value, ApiError> {
    let ct = content_type(&req.headers);
    if ct == "application/vnd.kubernetes.protobuf" {
        return crate::protobuf::decode(&req.body).map_err(|e| ApiError::unsupported_media(e.to_string()));
    }
    if ct.contains("protobuf") || ct.contains("cbor") {
        return Err(ApiError::unsupported_media(format!(
            "{ct} is not supported; send application/json"
        )));
    }
    if ct.contains("yaml") {
        return serde_yaml::from_slice(&req.body)
            .map_err(|e| ApiError::bad_request(format!("invalid YAML body: {e}")));
    }
    serde_json::from_slice(&req.body).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}

fn delete_options(req: &Req) -> Result<Value, ApiError> {
    if req.body.is_empty() {
        return Ok(Value::Null);
    }
    json_body(req)
}
