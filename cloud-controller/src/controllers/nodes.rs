//! Node controller (cloud node + cloud node lifecycle): nodes tainted
//! `node.cloudprovider.kubernetes.io/uninitialized` get providerID, addresses and topology
//! labels from their instance, and lose the taint; NotReady nodes whose instance is gone are
//! deleted. Runs on node changes and every `node_monitor`.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use tokio::sync::watch;

use crate::controllers::{Shared, SyncError};
use crate::gce::lookup::{instance_facts, instance_lookup};
use crate::nodes::{LifecycleAction, needs_initialization, node_ready, plan_node_init, plan_node_lifecycle};
use crate::objects::parse_provider_id;

pub(crate) async fn run(
    shared: Arc<Shared>,
    mut trigger: watch::Receiver<String>,
    shutdown: svcnet_core::shutdown::Shutdown,
) {
    shared.wait_nodes_ready().await;
    let mut tick = tokio::time::interval(shared.tuning.node_monitor);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.wait() => return,
            _ = tick.tick() => {}
            changed = trigger.changed() => if changed.is_err() { return },
        }
        for node in shared.node_list() {
            sync_node(&shared, &node).await;
        }
    }
}

/// One node's check, in a span carrying its name (the log lines inside do not repeat it).
#[tracing::instrument(skip_all, fields(node = node.metadata.name.as_deref().unwrap_or_default()))]
async fn sync_node(shared: &Shared, node: &Node) {
    let result = if needs_initialization(node) {
        initialize(shared, node).await
    } else if !node_ready(node) {
        lifecycle(shared, node).await
    } else {
        Ok(())
    };
    if let Err(err) = result {
        shared.gce.metrics.sync("node", err.metric_label());
        tracing::warn!(%err, "node sync failed");
    }
}

/// Where the node's instance is: its providerID, else an instance named like the node in one
/// of the cluster's zones (upstream looks instances up by node name).
async fn locate(sh: &Shared, node: &Node) -> Result<Option<crate::objects::InstanceFacts>, SyncError> {
    let name = node.metadata.name.clone().unwrap_or_default();
    if let Some(id) = node
        .spec
        .as_ref()
        .and_then(|s| s.provider_id.as_deref())
        .and_then(parse_provider_id)
    {
        return Ok(instance_facts(&sh.gce, &sh.tuning.retry, &id.zone, &id.instance).await?);
    }
    for zone in &sh.zones {
        if let Some(f) = instance_facts(&sh.gce, &sh.tuning.retry, zone, &name).await? {
            return Ok(Some(f));
        }
    }
    Ok(None)
}

async fn initialize(sh: &Shared, node: &Node) -> Result<(), SyncError> {
    let name = node.metadata.name.clone().unwrap_or_default();
    let Some(facts) = locate(sh, node).await? else {
        tracing::warn!(zones = ?sh.zones, "no instance found for uninitialized node");
        return Ok(());
    };
    let init = match plan_node_init(node, &facts) {
        Ok(i) => i,
        Err(e) => {
            tracing::warn!(error = %e, "cannot initialise node");
            return Ok(());
        }
    };
    let api: Api<Node> = Api::all(sh.client.clone());
    // Addresses first: once the taint is gone the node is schedulable and must be reachable.
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&init.status_patch()),
    )
    .await?;
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&init.spec_patch()))
        .await?;
    tracing::info!(instance = %facts.name, zone = %facts.zone, "node initialized");
    Ok(())
}

async fn lifecycle(sh: &Shared, node: &Node) -> Result<(), SyncError> {
    let name = node.metadata.name.clone().unwrap_or_default();
    let Some(id) = node
        .spec
        .as_ref()
        .and_then(|s| s.provider_id.as_deref())
        .and_then(parse_provider_id)
    else {
        return Ok(());
    };
    let lookup = instance_lookup(&sh.gce, &sh.tuning.retry, &id.zone, &id.instance).await?;
    if plan_node_lifecycle(node, lookup) == LifecycleAction::Delete {
        tracing::info!(instance = %id.instance, "deleting NotReady node whose instance is gone");
        let api: Api<Node> = Api::all(sh.client.clone());
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
