//! Zonal unmanaged instance groups (the backends of internal load balancers). GCE does not return
//! the members in the resource, only `size`; they are kept in [`MEMBERS`] (stripped from API
//! answers by [`super::public`], visible in the state dump) and served by `listInstances`.
use serde_json::{Map, Value, json};

use super::{Ctx, str_list};
use crate::errors::ApiError;
use crate::kind::Kind;
use crate::scope::Scope;

/// Private field holding the member instance URLs.
pub const MEMBERS: &str = "_members";

pub fn prepare(ctx: &Ctx<'_>, mut obj: Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    if let Some(net) = obj.get("network").and_then(Value::as_str).map(str::to_string) {
        let link = ctx.existing_link("resource.network", &net, Kind::Network, Some(&Scope::Global))?;
        obj.insert("network".into(), json!(link));
    }
    obj.insert("size".into(), json!(0));
    obj.insert(MEMBERS.into(), json!([]));
    obj.insert("fingerprint".into(), json!("42WmSpB8rSM="));
    Ok(obj)
}

/// `addInstances` / `removeInstances`: body `{"instances": [{"instance": URL}]}`.
pub fn verb(ctx: &Ctx<'_>, current: &Value, verb: &str, body: &Value) -> Result<Value, ApiError> {
    let group_link = current["selfLink"].as_str().unwrap_or_default().to_string();
    let group_zone = current["zone"].as_str().unwrap_or_default().to_string();
    let refs: Vec<String> = body["instances"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["instance"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if refs.is_empty() {
        return Err(ApiError::required("instances[0].instance"));
    }
    let mut members = str_list(&current[MEMBERS]);
    for (i, r) in refs.iter().enumerate() {
        let field = format!("instances[{i}].instance");
        match verb {
            "addInstances" => {
                let link = ctx.existing_link(&field, r, Kind::Instance, None)?;
                let inst = ctx.res.find_by_link(Kind::Instance, &link);
                if inst.and_then(|v| v["zone"].as_str()) != Some(group_zone.as_str()) {
                    return Err(ApiError::invalid_field(
                        &field,
                        r,
                        "The instance must be in the same zone as the instance group.",
                    ));
                }
                if members.contains(&link) {
                    return Err(ApiError::new(
                        400,
                        "memberAlreadyExists",
                        format!(
                            "The resource '{}' is already a member of '{}'",
                            rel(&link),
                            rel(&group_link)
                        ),
                    ));
                }
                members.push(link);
            }
            "removeInstances" => {
                let link = ctx.any_link(&field, r, Kind::Instance, None)?;
                let before = members.len();
                members.retain(|m| *m != link);
                if members.len() == before {
                    return Err(ApiError::new(
                        400,
                        "memberNotFound",
                        format!(
                            "The resource '{}' is not a member of '{}'",
                            rel(&link),
                            rel(&group_link)
                        ),
                    ));
                }
            }
            _ => return Err(unknown(verb)),
        }
    }
    members.sort();
    let mut next = current.clone();
    next["size"] = json!(members.len());
    next[MEMBERS] = json!(members);
    Ok(next)
}

/// `listInstances` (POST, not a mutation): `compute#instanceGroupsListInstances`.
pub fn list_instances(ctx: &Ctx<'_>, current: &Value) -> Value {
    let items: Vec<Value> = str_list(&current[MEMBERS])
        .into_iter()
        .map(|link| {
            let status = ctx
                .res
                .find_by_link(Kind::Instance, &link)
                .and_then(|i| i["status"].as_str())
                .unwrap_or("RUNNING")
                .to_string();
            json!({ "instance": link, "status": status })
        })
        .collect();
    let mut out = json!({
        "kind": "compute#instanceGroupsListInstances",
        "id": current["id"].clone(),
        "selfLink": format!("{}/listInstances", current["selfLink"].as_str().unwrap_or_default()),
    });
    if !items.is_empty() {
        out["items"] = json!(items);
    }
    out
}

fn unknown(verb: &str) -> ApiError {
    ApiError::new(
        405,
        "methodNotAllowed",
        format!("Unknown method '{verb}' on instanceGroups"),
    )
}

fn rel(link: &str) -> &str {
    link.find("projects/").map_or(link, |i| &link[i..])
}
