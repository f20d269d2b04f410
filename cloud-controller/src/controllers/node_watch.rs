//! One reflector over Nodes shared by all controllers. After every watch event it recomputes
//! what each controller cares about and wakes it only when that changed: kubelet status updates
//! (heartbeats, conditions) must not re-sync every load balancer.

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;

use crate::lb::hosts::lb_hosts;
use crate::nodes::needs_initialization;

/// Wake-up channels (the value is a fingerprint; receivers only care that it changed).
#[derive(Clone)]
pub(crate) struct NodeTriggers {
    /// Target pool membership may have changed.
    pub lb: watch::Receiver<String>,
    /// Pod CIDRs, node UIDs or instances changed.
    pub routes: watch::Receiver<String>,
    /// Some node needs initialisation or its readiness changed.
    pub nodes: watch::Receiver<String>,
    /// True once the first list completed. (kube-runtime's `Store::wait_until_ready` wakes only
    /// one of several concurrent waiters, so the controllers wait on this instead.)
    pub ready: watch::Receiver<bool>,
}

/// What decides pool membership: eligible instances and nodes still waiting for a providerID.
pub(crate) fn lb_fingerprint(nodes: &[Node]) -> String {
    let (hosts, skipped) = lb_hosts(nodes);
    let hosts: Vec<String> = hosts
        .iter()
        .map(|h| format!("{}/{}", h.zone, h.instance))
        .collect();
    format!("{}|{}", hosts.join(","), skipped.join(","))
}

/// What decides routes: name, uid, provider ID and pod CIDRs of every node.
pub(crate) fn route_fingerprint(nodes: &[Node]) -> String {
    let mut rows: Vec<String> = nodes
        .iter()
        .map(|n| {
            let spec = n.spec.clone().unwrap_or_default();
            format!(
                "{}:{}:{}:{}:{}",
                n.metadata.name.as_deref().unwrap_or(""),
                n.metadata.uid.as_deref().unwrap_or(""),
                spec.provider_id.unwrap_or_default(),
                spec.pod_cidr.unwrap_or_default(),
                spec.pod_cidrs.unwrap_or_default().join(",")
            )
        })
        .collect();
    rows.sort();
    rows.join(";")
}

/// What the node controller acts on: nodes to initialise, and which nodes are NotReady.
pub(crate) fn node_fingerprint(nodes: &[Node]) -> String {
    let mut rows: Vec<String> = nodes
        .iter()
        .filter(|n| needs_initialization(n) || !crate::nodes::node_ready(n))
        .map(|n| {
            format!(
                "{}:{}",
                n.metadata.name.as_deref().unwrap_or(""),
                needs_initialization(n)
            )
        })
        .collect();
    rows.sort();
    rows.join(";")
}

/// Starts the node reflector task. The store is ready once the first list completed.
pub(crate) fn spawn(client: kube::Client) -> (Store<Node>, NodeTriggers, tokio::task::JoinHandle<()>) {
    let (reader, writer) = reflector::store();
    let (lb_tx, lb) = watch::channel(String::new());
    let (routes_tx, routes) = watch::channel(String::new());
    let (nodes_tx, nodes) = watch::channel(String::new());
    let (ready_tx, ready) = watch::channel(false);
    let store = reader.clone();
    let api: Api<Node> = Api::all(client);
    let handle = tokio::spawn(async move {
        let mut events = reflector::reflector(writer, watcher(api, watcher::Config::default()))
            .default_backoff()
            .boxed();
        while let Some(ev) = events.next().await {
            match ev {
                Err(err) => {
                    tracing::warn!(%err, "node watch error (retrying)");
                    continue;
                }
                Ok(watcher::Event::InitDone) => {
                    ready_tx.send_replace(true);
                }
                Ok(_) => {}
            }
            let current: Vec<Node> = store.state().iter().map(|n| (**n).clone()).collect();
            let update = |tx: &watch::Sender<String>, fp: String| {
                tx.send_if_modified(|old| {
                    if *old == fp {
                        return false;
                    }
                    *old = fp;
                    true
                });
            };
            update(&lb_tx, lb_fingerprint(&current));
            update(&routes_tx, route_fingerprint(&current));
            update(&nodes_tx, node_fingerprint(&current));
        }
    });
    (
        reader,
        NodeTriggers {
            lb,
            routes,
            nodes,
            ready,
        },
        handle,
    )
}

/// A watch receiver as a stream of wake-ups (for `Controller::reconcile_all_on`).
pub(crate) fn changes(rx: watch::Receiver<String>) -> impl Stream<Item = ()> + Send + 'static {
    futures::stream::unfold(rx, |mut rx| async move {
        rx.changed().await.ok()?;
        Some(((), rx))
    })
}
