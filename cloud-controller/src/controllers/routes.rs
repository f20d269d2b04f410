//! Route controller: every `route_resync` and whenever node pod CIDRs/UIDs/instances change,
//! list our routes, plan, delete stale ones and create missing ones (bounded concurrency), then
//! set NetworkUnavailable=False (RouteCreated) on nodes whose route exists, or True
//! (NoRouteCreated) where creating it failed. Nodes without a providerID are routed to the
//! instance of their name in the cluster's zones, as upstream.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams};
use tokio::sync::watch;

use crate::controllers::Shared;
use crate::gce::error::GceError;
use crate::gce::exec::{create_route, delete_route};
use crate::gce::lookup::{instance_facts, list_routes};
use crate::naming;
use crate::routes::{Located, NetworkCondition, instance_name, nodes_to_locate, plan_routes};

/// Runs until `shutdown` fires.
pub(crate) async fn run(
    shared: Arc<Shared>,
    mut trigger: watch::Receiver<String>,
    shutdown: svcnet_core::shutdown::Shutdown,
) {
    shared.wait_nodes_ready().await;
    let mut tick = tokio::time::interval(shared.tuning.route_resync);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.wait() => return,
            _ = tick.tick() => {}
            changed = trigger.changed() => if changed.is_err() { return },
        }
        match sync(&shared).await {
            Ok(()) => shared.gce.metrics.sync("route", "ok"),
            Err(err) => {
                shared.gce.metrics.sync("route", err.metric_label());
                tracing::warn!(%err, "route sync failed; retrying at the next period");
            }
        }
    }
}

/// One reconciliation pass over all routes.
pub(crate) async fn sync(sh: &Shared) -> Result<(), GceError> {
    let prefix = naming::route_prefix(&sh.cfg.cluster_name);
    let existing = list_routes(&sh.gce, &sh.tuning.retry, &prefix).await?;
    let nodes = sh.node_list();
    let to_locate = nodes_to_locate(&nodes, &existing, &sh.cfg);
    let located = locate(sh, &to_locate).await;
    let plan = plan_routes(&nodes, &existing, &sh.cfg, &located);
    tracing::debug!(
        existing = existing.len(),
        create = plan.create.len(),
        delete = plan.delete.len(),
        conditions = plan.conditions.len(),
        "route sync"
    );
    for err in &plan.errors {
        tracing::warn!(error = %err, "node cannot get a route");
    }
    let n = sh.tuning.concurrency.max(1);
    let retry = sh.tuning.retry;
    // Owned items and a cloned client per call: the futures must not borrow the plan.
    let gce = sh.gce.clone();
    let deleted: Vec<(String, Result<_, GceError>)> = futures::stream::iter(plan.delete.clone())
        .map(move |name| {
            let gce = gce.clone();
            async move {
                let r = delete_route(&gce, &retry, &name).await;
                (name, r)
            }
        })
        .buffer_unordered(n)
        .collect()
        .await;
    for (name, res) in deleted {
        match res {
            Ok(_) => tracing::info!(route = %name, "route deleted"),
            Err(err) => tracing::warn!(route = %name, %err, "deleting route failed"),
        }
    }
    let gce = sh.gce.clone();
    let created: Vec<(crate::objects::Route, Result<_, GceError>)> =
        futures::stream::iter(plan.create.clone())
            .map(move |route| {
                let gce = gce.clone();
                async move {
                    let r = create_route(&gce, &retry, &route).await;
                    (route, r)
                }
            })
            .buffer_unordered(n)
            .collect()
            .await;
    // Nodes whose route could not be created (matched by next hop instance).
    let mut failed = BTreeSet::new();
    for (route, res) in created {
        match res {
            Ok(_) => tracing::info!(route = %route.name, dest = %route.dest_range, "route created"),
            Err(err) => {
                tracing::warn!(route = %route.name, %err, "creating route failed");
                failed.insert(crate::objects::instance_key(&route.next_hop_instance).to_owned());
            }
        }
    }
    let now = Timestamp::now().to_string();
    for cond in &plan.conditions {
        let node = nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(cond.node.as_str()));
        let failed_here =
            node.is_some_and(|n| node_instance_key(n, &located).is_some_and(|k| failed.contains(&k)));
        let cond = if failed_here {
            NetworkCondition::failed(&cond.node)
        } else {
            cond.clone()
        };
        set_condition(sh, &cond, &now).await;
    }
    Ok(())
}

/// Upstream CreateRoute's getInstanceByName (providers/gce/gce_instances.go): for each node, GET
/// the instance of its name in the cluster's zones in turn; the first zone that has it wins, 404
/// tries the next. Any other error leaves the node out this time (upstream fails its route).
async fn locate(sh: &Shared, nodes: &[String]) -> Located {
    let mut out = Located::new();
    for node in nodes {
        let name = instance_name(node);
        for zone in &sh.zones {
            match instance_facts(&sh.gce, &sh.tuning.retry, zone, name).await {
                Ok(Some(_)) => {
                    out.insert(node.clone(), zone.clone());
                    break;
                }
                Ok(None) => continue,
                Err(err) => {
                    tracing::warn!(node = %node, %zone, %err, "looking up the node's instance failed");
                    break;
                }
            }
        }
    }
    out
}

fn node_instance_key(node: &Node, located: &Located) -> Option<String> {
    let name = node.metadata.name.as_deref()?;
    let id = node.spec.as_ref().and_then(|s| s.provider_id.as_deref());
    match id.and_then(crate::objects::parse_provider_id) {
        Some(id) => Some(format!("zones/{}/instances/{}", id.zone, id.instance)),
        None => located
            .get(name)
            .map(|zone| format!("zones/{zone}/instances/{}", instance_name(name))),
    }
}

async fn set_condition(sh: &Shared, cond: &NetworkCondition, now: &str) {
    let api: Api<Node> = Api::all(sh.client.clone());
    let patch = cond.status_patch(now);
    if let Err(err) = api
        .patch_status(&cond.node, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
    {
        tracing::warn!(node = %cond.node, %err, "setting NetworkUnavailable failed");
    }
}
