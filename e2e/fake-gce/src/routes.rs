//! Compute v1 URL routing: `/compute/v1/projects/{project}/...` to a typed route.
use crate::config::Config;
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::scope::{Scope, ScopeType};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Project,
    ScopeList(ScopeType),
    ScopeGet(Scope),
    List(Kind, Scope),
    Insert(Kind, Scope),
    Get(Kind, Scope, String),
    Delete(Kind, Scope, String),
    Patch(Kind, Scope, String),
    Update(Kind, Scope, String),
    /// Custom verb such as `addInstance`, `setTarget`, `setTags`.
    Verb(Kind, Scope, String, String),
    Aggregated(Kind),
    AggregatedOps,
    OpList(Scope),
    OpGet(Scope, String),
    OpWait(Scope, String),
    OpDelete(Scope, String),
}

impl Route {
    /// Calls that change resources (counted by `/_fake/calls` and subject to quotas/op faults).
    pub fn is_mutating(&self) -> bool {
        match self {
            Route::Verb(_, _, _, verb) => !crate::resources::read_only_verb(verb),
            _ => matches!(
                self,
                Route::Insert(..) | Route::Delete(..) | Route::Patch(..) | Route::Update(..)
            ),
        }
    }
}

const PREFIX: &str = "/compute/v1/projects/";

pub fn parse(cfg: &Config, method: &str, path: &str) -> Result<Route, ApiError> {
    let not_found = || ApiError::not_found(path.trim_start_matches("/compute/v1/"));
    let rest = path.strip_prefix(PREFIX).ok_or_else(not_found)?;
    let segs: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let (project, segs) = segs.split_first().ok_or_else(not_found)?;
    if *project != cfg.project {
        return Err(ApiError::not_found(&format!("projects/{project}")));
    }
    let m = method.to_ascii_uppercase();
    let get = m == "GET";
    let (scope, tail): (Scope, &[&str]) = match segs {
        [] if get => return Ok(Route::Project),
        ["aggregated", "operations"] if get => return Ok(Route::AggregatedOps),
        ["aggregated", coll] if get => {
            // aggregated/healthChecks lists the global checks beside the regional ones (one route).
            let kind = [ScopeType::Regional, ScopeType::Zonal]
                .into_iter()
                .find_map(|t| Kind::from_collection(coll, t))
                .map(|k| {
                    if k == Kind::RegionHealthCheck {
                        Kind::HealthCheck
                    } else {
                        k
                    }
                })
                .ok_or_else(not_found)?;
            return Ok(Route::Aggregated(kind));
        }
        ["regions"] if get => return Ok(Route::ScopeList(ScopeType::Regional)),
        ["zones"] if get => return Ok(Route::ScopeList(ScopeType::Zonal)),
        ["global", tail @ ..] => (Scope::Global, tail),
        ["regions", r, tail @ ..] => {
            if *r != cfg.region {
                return Err(ApiError::not_found(&format!("projects/{project}/regions/{r}")));
            }
            (Scope::Region((*r).to_string()), tail)
        }
        ["zones", z, tail @ ..] => {
            if !cfg.zones.iter().any(|c| c == z) {
                return Err(ApiError::not_found(&format!("projects/{project}/zones/{z}")));
            }
            (Scope::Zone((*z).to_string()), tail)
        }
        _ => return Err(not_found()),
    };
    let (coll, tail) = match tail {
        [] if get && scope != Scope::Global => return Ok(Route::ScopeGet(scope)),
        [coll, tail @ ..] => (*coll, tail),
        _ => return Err(not_found()),
    };
    if coll == "operations" {
        return match (m.as_str(), tail) {
            ("GET", []) => Ok(Route::OpList(scope)),
            ("GET", [name]) => Ok(Route::OpGet(scope, (*name).to_string())),
            ("DELETE", [name]) => Ok(Route::OpDelete(scope, (*name).to_string())),
            ("POST", [name, "wait"]) => Ok(Route::OpWait(scope, (*name).to_string())),
            _ => Err(not_found()),
        };
    }
    let kind = Kind::from_collection(coll, scope.scope_type()).ok_or_else(not_found)?;
    let route = match (m.as_str(), tail) {
        ("GET", []) => Route::List(kind, scope),
        ("POST", []) => Route::Insert(kind, scope),
        ("GET", [n]) => Route::Get(kind, scope, (*n).to_string()),
        ("DELETE", [n]) => Route::Delete(kind, scope, (*n).to_string()),
        ("PATCH", [n]) => Route::Patch(kind, scope, (*n).to_string()),
        ("PUT", [n]) => Route::Update(kind, scope, (*n).to_string()),
        ("POST", [n, verb]) => Route::Verb(kind, scope, (*n).to_string(), (*verb).to_string()),
        _ => {
            return Err(ApiError::new(
                405,
                "methodNotAllowed",
                format!("{m} is not allowed on {path}"),
            ));
        }
    };
    Ok(route)
}

#[cfg(test)]
mod tests;
