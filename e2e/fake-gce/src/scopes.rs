//! Project, region and zone resources (read-only, with quota usage).
use serde_json::{Value, json};

use crate::app::{App, Inner};
use crate::kind::Kind;
use crate::lists::known_scopes;
use crate::scope::{Scope, ScopeType};

fn quotas(inner: &Inner, kinds: &[Kind]) -> Vec<Value> {
    kinds
        .iter()
        .filter_map(|k| {
            let metric = k.quota_metric()?;
            let limit = inner.quotas.get(metric).copied().unwrap_or(1000);
            Some(json!({"metric": metric, "limit": limit as f64, "usage": inner.data.resources.count(*k) as f64}))
        })
        .collect()
}

pub fn project(app: &App, inner: &Inner) -> Value {
    json!({
        "kind": "compute#project",
        "id": "1000000000001",
        "name": app.cfg.project,
        "selfLink": app.urls.project_link(),
        "defaultNetworkTier": "PREMIUM",
        "quotas": quotas(inner, &[Kind::Firewall, Kind::Route]),
    })
}

pub fn scope_get(app: &App, inner: &Inner, s: &Scope) -> Value {
    match s {
        Scope::Region(r) => json!({
            "kind": "compute#region",
            "id": "1000",
            "name": r,
            "status": "UP",
            "selfLink": app.urls.scope_link(s),
            "zones": app.cfg.zones.iter().map(|z| app.urls.scope_link(&Scope::Zone(z.clone()))).collect::<Vec<_>>(),
            "quotas": quotas(inner, &[Kind::ForwardingRule, Kind::TargetPool, Kind::Address]),
        }),
        _ => {
            let name = s.path().trim_start_matches("zones/").to_string();
            json!({
                "kind": "compute#zone",
                "id": "2000",
                "name": name,
                "status": "UP",
                "region": app.urls.scope_link(&Scope::Region(app.cfg.region.clone())),
                "selfLink": app.urls.scope_link(s),
            })
        }
    }
}

pub fn scope_list(app: &App, inner: &Inner, t: ScopeType) -> Value {
    let items: Vec<Value> = known_scopes(app, t)
        .iter()
        .map(|s| scope_get(app, inner, s))
        .collect();
    let (kind, coll) = if t == ScopeType::Zonal {
        ("compute#zoneList", "zones")
    } else {
        ("compute#regionList", "regions")
    };
    json!({"kind": kind, "id": format!("projects/{}/{coll}", app.cfg.project), "items": items,
           "selfLink": format!("{}/{coll}", app.urls.project_link())})
}
