//! Regional target pools: member instances and (at most one) legacy HTTP health check.
use serde_json::{Map, Value, json};

use super::{Ctx, default, str_list};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::scope::Scope;
use crate::validate;

pub fn prepare(
    ctx: &Ctx<'_>,
    _scope: &Scope,
    mut obj: Map<String, Value>,
) -> Result<Map<String, Value>, ApiError> {
    default(&mut obj, "sessionAffinity", json!("NONE"));
    let aff = validate::opt_str(&obj, "sessionAffinity")?
        .unwrap_or("NONE")
        .to_string();
    validate::one_of(
        "resource.sessionAffinity",
        &aff,
        &["NONE", "CLIENT_IP", "CLIENT_IP_PROTO"],
    )?;
    let mut instances: Vec<String> = Vec::new();
    for (i, r) in validate::opt_str_list(&obj, "instances")?.iter().enumerate() {
        let link = instance_link(ctx, &format!("resource.instances[{i}]"), r)?;
        if !instances.contains(&link) {
            instances.push(link);
        }
    }
    obj.insert("instances".into(), json!(instances));
    let mut hcs: Vec<String> = Vec::new();
    for (i, r) in validate::opt_str_list(&obj, "healthChecks")?.iter().enumerate() {
        let field = format!("resource.healthChecks[{i}]");
        hcs.push(ctx.existing_link(&field, r, Kind::HttpHealthCheck, Some(&Scope::Global))?);
    }
    if hcs.len() > 1 {
        return Err(ApiError::invalid(
            "A target pool may have at most one health check.",
        ));
    }
    obj.insert("healthChecks".into(), json!(hcs));
    Ok(obj)
}

/// An existing instance in a zone of this region.
fn instance_link(ctx: &Ctx<'_>, field: &str, r: &str) -> Result<String, ApiError> {
    let (scope, _) = ctx.urls.parse_ref(field, r, Kind::Instance, None)?;
    if let Scope::Zone(z) = &scope
        && !z.starts_with(&format!("{}-", ctx.cfg.region))
    {
        return Err(ApiError::invalid_field(
            field,
            r,
            "The instance must be in the target pool's region.",
        ));
    }
    ctx.existing_link(field, r, Kind::Instance, None)
}

/// `addInstance`, `removeInstance`, `addHealthCheck`, `removeHealthCheck`.
pub fn verb(ctx: &Ctx<'_>, current: &Value, verb: &str, body: &Value) -> Result<Value, ApiError> {
    let pool_link = current["selfLink"].as_str().unwrap_or_default().to_string();
    let (field, inner, list_key) = match verb {
        "addInstance" | "removeInstance" => ("instances", "instance", "instances"),
        "addHealthCheck" | "removeHealthCheck" => ("healthChecks", "healthCheck", "healthChecks"),
        _ => {
            return Err(ApiError::new(
                405,
                "methodNotAllowed",
                format!("Unknown method '{verb}' on targetPools"),
            ));
        }
    };
    let refs: Vec<String> = body[list_key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x[inner].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if refs.is_empty() {
        return Err(ApiError::required(&format!("{list_key}[0].{inner}")));
    }
    let mut members = str_list(&current[field]);
    for (i, r) in refs.iter().enumerate() {
        let fname = format!("{list_key}[{i}].{inner}");
        match verb {
            "addInstance" => {
                let link = instance_link(ctx, &fname, r)?;
                // Adding a member twice is accepted and changes nothing.
                if !members.contains(&link) {
                    members.push(link);
                }
            }
            "addHealthCheck" => {
                let link = ctx.existing_link(&fname, r, Kind::HttpHealthCheck, Some(&Scope::Global))?;
                if !members.contains(&link) {
                    members.push(link);
                }
            }
            _ => {
                let kind = if inner == "instance" {
                    Kind::Instance
                } else {
                    Kind::HttpHealthCheck
                };
                let default_scope = (kind == Kind::HttpHealthCheck).then_some(&Scope::Global);
                let link = ctx.any_link(&fname, r, kind, default_scope)?;
                let before = members.len();
                members.retain(|m| *m != link);
                if members.len() == before {
                    return Err(ApiError::invalid(format!(
                        "The resource '{}' is not a member of '{}'.",
                        rel(&link),
                        rel(&pool_link)
                    )));
                }
            }
        }
    }
    if field == "healthChecks" && members.len() > 1 {
        return Err(ApiError::invalid(
            "A target pool may have at most one health check.",
        ));
    }
    let mut next = current.clone();
    next[field] = json!(members);
    Ok(next)
}

fn rel(link: &str) -> &str {
    link.find("projects/").map_or(link, |i| &link[i..])
}
