//! List, aggregated list and operation list bodies (filter + paging), shaped like GCE's.
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::app::{App, Inner};
use crate::clock::now_ms;
use crate::errors::ApiError;
use crate::filter::Filter;
use crate::kind::Kind;
use crate::paging::PageReq;
use crate::query::Params;
use crate::scope::{Scope, ScopeType};

fn parse_filter(params: &Params) -> Result<Option<Filter>, ApiError> {
    match params.get("filter").map(String::as_str) {
        None | Some("") => Ok(None),
        Some(f) => Filter::parse(f).map(Some),
    }
}

fn page_req(params: &Params) -> Result<PageReq, ApiError> {
    PageReq::from_params(
        params.get("maxResults").map(String::as_str),
        params.get("pageToken").map(String::as_str),
    )
}

pub fn list(app: &App, inner: &Inner, kind: Kind, scope: &Scope, params: &Params) -> Result<Value, ApiError> {
    let filter = parse_filter(params)?;
    let items: Vec<Value> = inner
        .data
        .resources
        .in_scope(kind, scope)
        .filter(|v| filter.as_ref().is_none_or(|f| f.matches(v)))
        .map(crate::resources::public)
        .collect();
    Ok(list_body(
        app,
        &format!("{}List", kind.kind_str()),
        scope,
        kind.collection(),
        items,
        page_req(params)?,
    ))
}

fn list_body(
    app: &App,
    list_kind: &str,
    scope: &Scope,
    coll: &str,
    items: Vec<Value>,
    req: PageReq,
) -> Value {
    let (page, next) = req.apply(items);
    let mut out = json!({
        "kind": list_kind,
        "id": format!("projects/{}/{}/{coll}", app.cfg.project, scope.path()),
        "selfLink": app.urls.collection_link(scope, coll),
    });
    // GCE leaves `items` out of an empty page.
    if !page.is_empty() {
        out["items"] = json!(page);
    }
    if let Some(t) = next {
        out["nextPageToken"] = json!(t);
    }
    out
}

/// Scopes that exist for a scope type (used for aggregated lists and their empty-scope warnings).
pub fn known_scopes(app: &App, t: ScopeType) -> Vec<Scope> {
    match t {
        ScopeType::Global => vec![Scope::Global],
        ScopeType::Regional => vec![Scope::Region(app.cfg.region.clone())],
        ScopeType::Zonal => app.cfg.zones.iter().map(|z| Scope::Zone(z.clone())).collect(),
    }
}

pub fn aggregated(app: &App, inner: &Inner, kind: Kind, params: &Params) -> Result<Value, ApiError> {
    let filter = parse_filter(params)?;
    // GCE's aggregated health checks hold the global ones and every region's.
    let kinds: &[Kind] = if kind == Kind::HealthCheck {
        &[Kind::HealthCheck, Kind::RegionHealthCheck]
    } else {
        std::slice::from_ref(&kind)
    };
    let pairs: Vec<(String, Value)> = kinds
        .iter()
        .flat_map(|k| inner.data.resources.iter(*k))
        .filter(|(_, v)| filter.as_ref().is_none_or(|f| f.matches(v)))
        .map(|(k, v)| {
            (
                k.rsplit_once('/').map_or(String::new(), |(s, _)| s.to_string()),
                crate::resources::public(v),
            )
        })
        .collect();
    let (page, next) = page_req(params)?.apply(pairs);
    let coll = kind.collection();
    let scopes: Vec<String> = kinds
        .iter()
        .flat_map(|k| known_scopes(app, k.scope_type()))
        .map(|s| s.path())
        .collect();
    let out = aggregate_body(
        app,
        &format!("{}AggregatedList", kind.kind_str()),
        coll,
        &scopes,
        page,
        next,
    );
    Ok(out)
}

fn aggregate_body(
    app: &App,
    list_kind: &str,
    coll: &str,
    scopes: &[String],
    page: Vec<(String, Value)>,
    next: Option<String>,
) -> Value {
    let mut items: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (scope, v) in page {
        items.entry(scope).or_default().push(v);
    }
    let mut map = Map::new();
    for s in scopes {
        if !items.contains_key(s) {
            map.insert(
                s.clone(),
                json!({"warning": {
                    "code": "NO_RESULTS_ON_PAGE",
                    "message": format!("There are no results for scope '{s}' on this page."),
                    "data": [{"key": "scope", "value": s}],
                }}),
            );
        }
    }
    for (s, vs) in items {
        map.insert(s, json!({ coll: vs }));
    }
    let mut out = json!({
        "kind": list_kind,
        "id": format!("projects/{}/aggregated/{coll}", app.cfg.project),
        "items": map,
        "selfLink": format!("{}/aggregated/{coll}", app.urls.project_link()),
    });
    if let Some(t) = next {
        out["nextPageToken"] = json!(t);
    }
    out
}

pub fn op_list(app: &App, inner: &Inner, scope: Option<&Scope>, params: &Params) -> Result<Value, ApiError> {
    let filter = parse_filter(params)?;
    let now = now_ms();
    let mut ops: Vec<(String, Value)> = inner
        .data
        .operations
        .values()
        .filter(|op| scope.is_none_or(|s| op.scope == s.path()))
        .map(|op| (op.scope.clone(), op.render(&app.urls, now)))
        .filter(|(_, v)| filter.as_ref().is_none_or(|f| f.matches(v)))
        .collect();
    ops.sort_by(|a, b| a.1["insertTime"].as_str().cmp(&b.1["insertTime"].as_str()));
    let req = page_req(params)?;
    match scope {
        Some(s) => {
            let items = ops.into_iter().map(|(_, v)| v).collect();
            Ok(list_body(
                app,
                "compute#operationList",
                s,
                "operations",
                items,
                req,
            ))
        }
        None => {
            let (page, next) = req.apply(ops);
            let mut scopes = vec!["global".to_string(), format!("regions/{}", app.cfg.region)];
            scopes.extend(app.cfg.zones.iter().map(|z| format!("zones/{z}")));
            Ok(aggregate_body(
                app,
                "compute#operationAggregatedList",
                "operations",
                &scopes,
                page,
                next,
            ))
        }
    }
}
