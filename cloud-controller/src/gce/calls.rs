//! One GCE call per [`Action`] through the official client, its operation waited for; grouped
//! by the collection it writes. Retries and classification of the answer are the caller's
//! (`exec`).

use google_cloud_compute_v1::model;
use serde_json::json;

use crate::gce::client::Gce;
use crate::gce::convert::to_model;
use crate::gce::error::GceError;
use crate::gce::ops::wait;
use crate::objects::Firewall;
use crate::objects::action::Action;

/// One attempt of `action` with request id `rid`.
pub(crate) async fn call_once(gce: &Gce, action: &Action, call: &str, rid: &str) -> Result<(), GceError> {
    match action {
        Action::CreateAddress(_)
        | Action::DeleteAddress { .. }
        | Action::CreateFirewall(_)
        | Action::PatchFirewall(_)
        | Action::DeleteFirewall { .. } => addresses_and_firewalls(gce, action, call, rid).await,
        Action::CreateHealthCheck(_) | Action::UpdateHealthCheck(_) | Action::DeleteHealthCheck { .. } => {
            http_health_checks(gce, action, call, rid).await
        }
        Action::CreateTargetPool(_)
        | Action::DeleteTargetPool { .. }
        | Action::AddInstances { .. }
        | Action::RemoveInstances { .. }
        | Action::AddHealthCheck { .. }
        | Action::RemoveHealthCheck { .. } => target_pools(gce, action, call, rid).await,
        Action::CreateForwardingRule(_) | Action::DeleteForwardingRule { .. } | Action::SetTarget { .. } => {
            forwarding_rules(gce, action, call, rid).await
        }
        Action::CreateInstanceGroup { .. }
        | Action::DeleteInstanceGroup { .. }
        | Action::AddGroupInstances { .. }
        | Action::RemoveGroupInstances { .. } => instance_groups(gce, action, call, rid).await,
        Action::CreateHealthCheckV1(_)
        | Action::UpdateHealthCheckV1(_)
        | Action::DeleteHealthCheckV1 { .. }
        | Action::CreateBackendService(_)
        | Action::UpdateBackendService(_)
        | Action::DeleteBackendService { .. } => backend_services(gce, action, call, rid).await,
    }
}

/// A JSON request body into a client model (for the small verb bodies).
fn body<M: serde::de::DeserializeOwned>(call: &str, v: serde_json::Value) -> Result<M, GceError> {
    serde_json::from_value(v).map_err(|e| GceError::new(call, format!("request body: {e}")))
}

/// Firewalls: PATCH when every list of the desired object is non-empty (a merge that replaces
/// them), PUT otherwise, because a PATCH cannot clear a list (empty lists are not sent).
fn patch_clears_nothing(fw: &Firewall) -> bool {
    !fw.source_ranges.is_empty()
        && !fw.destination_ranges.is_empty()
        && !fw.target_tags.is_empty()
        && !fw.allowed.is_empty()
}

/// `call_once` routed an action of another collection here.
fn misrouted(call: &str, action: &Action) -> GceError {
    GceError::new(
        call,
        format!("{} is not a call of this collection", action.label()),
    )
}

/// Addresses and firewalls.
async fn addresses_and_firewalls(gce: &Gce, action: &Action, call: &str, rid: &str) -> Result<(), GceError> {
    let (p, r) = (gce.project.as_str(), gce.region.as_str());
    match action {
        Action::CreateAddress(a) => {
            let m: model::Address = to_model(call, a)?;
            let c = &gce.addresses;
            wait(
                gce,
                call,
                c.insert()
                    .set_project(p)
                    .set_region(r)
                    .set_body(m)
                    .set_request_id(rid)
                    .poller(),
            )
            .await?;
        }
        Action::DeleteAddress { name } => {
            let c = &gce.addresses;
            wait(
                gce,
                call,
                c.delete()
                    .set_project(p)
                    .set_region(r)
                    .set_address(name)
                    .set_request_id(rid)
                    .poller(),
            )
            .await?;
        }
        Action::CreateFirewall(f) => {
            let m: model::Firewall = to_model(call, f)?;
            let c = &gce.firewalls;
            wait(
                gce,
                call,
                c.insert().set_project(p).set_body(m).set_request_id(rid).poller(),
            )
            .await?;
        }
        Action::PatchFirewall(f) => {
            let m: model::Firewall = to_model(call, f)?;
            let c = &gce.firewalls;
            if patch_clears_nothing(f) {
                let req = c.patch().set_project(p).set_firewall(&f.name).set_body(m);
                wait(gce, call, req.set_request_id(rid).poller()).await?;
            } else {
                let req = c.update().set_project(p).set_firewall(&f.name).set_body(m);
                wait(gce, call, req.set_request_id(rid).poller()).await?;
            }
        }
        Action::DeleteFirewall { name } => {
            let c = &gce.firewalls;
            wait(
                gce,
                call,
                c.delete()
                    .set_project(p)
                    .set_firewall(name)
                    .set_request_id(rid)
                    .poller(),
            )
            .await?;
        }
        other => return Err(misrouted(call, other)),
    }
    Ok(())
}

/// Legacy HTTP health checks (target pools).
async fn http_health_checks(gce: &Gce, action: &Action, call: &str, rid: &str) -> Result<(), GceError> {
    let p = gce.project.as_str();
    match action {
        Action::CreateHealthCheck(h) => {
            let m: model::HttpHealthCheck = to_model(call, h)?;
            let c = &gce.http_health_checks;
            wait(
                gce,
                call,
                c.insert().set_project(p).set_body(m).set_request_id(rid).poller(),
            )
            .await?;
        }
        Action::UpdateHealthCheck(h) => {
            let m: model::HttpHealthCheck = to_model(call, h)?;
            let c = &gce.http_health_checks;
            let req = c
                .update()
                .set_project(p)
                .set_http_health_check(&h.name)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::DeleteHealthCheck { name, .. } => {
            let c = &gce.http_health_checks;
            let req = c.delete().set_project(p).set_http_health_check(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        other => return Err(misrouted(call, other)),
    }
    Ok(())
}

/// Target pools and their members.
async fn target_pools(gce: &Gce, action: &Action, call: &str, rid: &str) -> Result<(), GceError> {
    let (p, r) = (gce.project.as_str(), gce.region.as_str());
    match action {
        Action::CreateTargetPool(t) => {
            let m: model::TargetPool = to_model(call, t)?;
            let c = &gce.target_pools;
            wait(
                gce,
                call,
                c.insert()
                    .set_project(p)
                    .set_region(r)
                    .set_body(m)
                    .set_request_id(rid)
                    .poller(),
            )
            .await?;
        }
        Action::DeleteTargetPool { name } => {
            let c = &gce.target_pools;
            let req = c.delete().set_project(p).set_region(r).set_target_pool(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::AddInstances { pool, instances } => {
            let refs: Vec<_> = instances.iter().map(|i| json!({ "instance": i })).collect();
            let m: model::TargetPoolsAddInstanceRequest = body(call, json!({ "instances": refs }))?;
            let c = &gce.target_pools;
            let req = c
                .add_instance()
                .set_project(p)
                .set_region(r)
                .set_target_pool(pool)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::RemoveInstances { pool, instances } => {
            let refs: Vec<_> = instances.iter().map(|i| json!({ "instance": i })).collect();
            let m: model::TargetPoolsRemoveInstanceRequest = body(call, json!({ "instances": refs }))?;
            let c = &gce.target_pools;
            let req = c
                .remove_instance()
                .set_project(p)
                .set_region(r)
                .set_target_pool(pool)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::AddHealthCheck { pool, health_check } => {
            let m: model::TargetPoolsAddHealthCheckRequest =
                body(call, json!({ "healthChecks": [{ "healthCheck": health_check }] }))?;
            let c = &gce.target_pools;
            let req = c
                .add_health_check()
                .set_project(p)
                .set_region(r)
                .set_target_pool(pool)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::RemoveHealthCheck { pool, health_check } => {
            let m: model::TargetPoolsRemoveHealthCheckRequest =
                body(call, json!({ "healthChecks": [{ "healthCheck": health_check }] }))?;
            let c = &gce.target_pools;
            let req = c
                .remove_health_check()
                .set_project(p)
                .set_region(r)
                .set_target_pool(pool)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        other => return Err(misrouted(call, other)),
    }
    Ok(())
}

/// Forwarding rules.
async fn forwarding_rules(gce: &Gce, action: &Action, call: &str, rid: &str) -> Result<(), GceError> {
    let (p, r) = (gce.project.as_str(), gce.region.as_str());
    match action {
        Action::CreateForwardingRule(f) => {
            let m: model::ForwardingRule = to_model(call, f)?;
            let c = &gce.forwarding_rules;
            wait(
                gce,
                call,
                c.insert()
                    .set_project(p)
                    .set_region(r)
                    .set_body(m)
                    .set_request_id(rid)
                    .poller(),
            )
            .await?;
        }
        Action::DeleteForwardingRule { name } => {
            let c = &gce.forwarding_rules;
            let req = c.delete().set_project(p).set_region(r).set_forwarding_rule(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::SetTarget {
            forwarding_rule,
            target,
        } => {
            let m: model::TargetReference = body(call, json!({ "target": target }))?;
            let c = &gce.forwarding_rules;
            let req = c
                .set_target()
                .set_project(p)
                .set_region(r)
                .set_forwarding_rule(forwarding_rule)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        other => return Err(misrouted(call, other)),
    }
    Ok(())
}

/// Unmanaged instance groups (internal LBs).
async fn instance_groups(gce: &Gce, action: &Action, call: &str, rid: &str) -> Result<(), GceError> {
    let p = gce.project.as_str();
    match action {
        Action::CreateInstanceGroup { zone, name } => {
            let m: model::InstanceGroup = body(call, json!({ "name": name }))?;
            let c = &gce.instance_groups;
            let req = c.insert().set_project(p).set_zone(zone).set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::DeleteInstanceGroup { zone, name } => {
            let c = &gce.instance_groups;
            let req = c.delete().set_project(p).set_zone(zone).set_instance_group(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::AddGroupInstances {
            zone,
            group,
            instances,
        } => {
            let refs: Vec<_> = instances.iter().map(|i| json!({ "instance": i })).collect();
            let m: model::InstanceGroupsAddInstancesRequest = body(call, json!({ "instances": refs }))?;
            let c = &gce.instance_groups;
            let req = c
                .add_instances()
                .set_project(p)
                .set_zone(zone)
                .set_instance_group(group)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::RemoveGroupInstances {
            zone,
            group,
            instances,
        } => {
            let refs: Vec<_> = instances.iter().map(|i| json!({ "instance": i })).collect();
            let m: model::InstanceGroupsRemoveInstancesRequest = body(call, json!({ "instances": refs }))?;
            let c = &gce.instance_groups;
            let req = c
                .remove_instances()
                .set_project(p)
                .set_zone(zone)
                .set_instance_group(group)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        other => return Err(misrouted(call, other)),
    }
    Ok(())
}

/// Health checks and regional backend services (internal LBs).
async fn backend_services(gce: &Gce, action: &Action, call: &str, rid: &str) -> Result<(), GceError> {
    let (p, r) = (gce.project.as_str(), gce.region.as_str());
    match action {
        Action::CreateHealthCheckV1(h) => {
            let m: model::HealthCheck = to_model(call, h)?;
            let c = &gce.health_checks;
            let req = c.insert().set_project(p).set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::UpdateHealthCheckV1(h) => {
            let m: model::HealthCheck = to_model(call, h)?;
            let c = &gce.health_checks;
            let req = c.update().set_project(p).set_health_check(&h.name).set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::DeleteHealthCheckV1 { name, .. } => {
            let c = &gce.health_checks;
            let req = c.delete().set_project(p).set_health_check(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::CreateBackendService(b) => {
            let m: model::BackendService = to_model(call, b)?;
            let c = &gce.region_backend_services;
            let req = c.insert().set_project(p).set_region(r).set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::UpdateBackendService(b) => {
            let m: model::BackendService = to_model(call, b)?;
            let c = &gce.region_backend_services;
            let req = c
                .update()
                .set_project(p)
                .set_region(r)
                .set_backend_service(&b.name)
                .set_body(m);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        Action::DeleteBackendService { name } => {
            let c = &gce.region_backend_services;
            let req = c.delete().set_project(p).set_region(r).set_backend_service(name);
            wait(gce, call, req.set_request_id(rid).poller()).await?;
        }
        other => return Err(misrouted(call, other)),
    }
    Ok(())
}
