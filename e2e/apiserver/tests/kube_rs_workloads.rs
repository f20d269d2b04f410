//! kube-rs 5 typed clients (k8s-openapi) against the stand-in's apps/v1 and RBAC kinds: objects
//! deserialize into the upstream types, a streaming-list watcher with a field selector follows a
//! DaemonSet, cluster-scoped RBAC objects are reachable through `Api::all`, and a Deployment in a
//! missing namespace is a 404 naming the namespace.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod common;

use std::time::Duration;

use common::Server;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(15);

fn daemonset(name: &str, args: &[&str]) -> DaemonSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "c", "image": "i", "args": args}]}},
        },
    }))
    .unwrap()
}

type Events = futures::stream::BoxStream<'static, watcher::Result<watcher::Event<DaemonSet>>>;

async fn next(w: &mut Events) -> watcher::Event<DaemonSet> {
    tokio::time::timeout(WAIT, w.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn typed_workloads_and_rbac_round_trip_and_watch() {
    let s = Server::start(&["--bookmark-interval-ms", "200"]);
    let client = s.client().await;
    let ds_api: Api<DaemonSet> = Api::namespaced(client.clone(), "kube-system");
    ds_api
        .create(&PostParams::default(), &daemonset("other", &[]))
        .await
        .unwrap();

    let cfg = watcher::Config::default()
        .streaming_lists()
        .fields("metadata.name=proxy");
    let mut w = watcher::watcher(ds_api.clone(), cfg).boxed();
    assert!(matches!(next(&mut w).await, watcher::Event::Init));
    assert!(
        matches!(next(&mut w).await, watcher::Event::InitDone),
        "`other` is not selected"
    );

    let created = ds_api
        .create(&PostParams::default(), &daemonset("proxy", &["--v=1"]))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let watcher::Event::Apply(seen) = next(&mut w).await else {
        panic!("expected the created DaemonSet")
    };
    assert_eq!(seen.metadata.name.as_deref(), Some("proxy"));

    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "args": ["--v=2"]}]}}}});
    ds_api
        .patch("proxy", &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .unwrap();
    let watcher::Event::Apply(seen) = next(&mut w).await else {
        panic!("expected the patched DaemonSet")
    };
    let spec = seen.spec.unwrap().template.spec.unwrap();
    assert_eq!(spec.containers[0].args, Some(vec!["--v=2".to_string()]));
    assert_eq!(
        spec.containers[0].image.as_deref(),
        Some("i"),
        "strategic merge kept the image"
    );
    assert_eq!(seen.metadata.generation, Some(2));

    ds_api.delete("proxy", &DeleteParams::default()).await.unwrap();
    assert!(matches!(next(&mut w).await, watcher::Event::Delete(_)));

    let roles: Api<ClusterRole> = Api::all(client.clone());
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list"]}],
    }))
    .unwrap();
    roles.create(&PostParams::default(), &role).await.unwrap();
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "x", "namespace": "kube-system"}],
    }))
    .unwrap();
    bindings.create(&PostParams::default(), &binding).await.unwrap();
    let got = bindings.get("reader").await.unwrap();
    assert_eq!(got.role_ref.name, "reader");
    assert_eq!(got.metadata.namespace, None);
    let listed = roles.list(&ListParams::default()).await.unwrap();
    let names: Vec<_> = listed
        .items
        .iter()
        .filter_map(|r| r.metadata.name.clone())
        .collect();
    assert_eq!(names, ["reader"]);
    assert_eq!(listed.items[0].rules.as_ref().unwrap()[0].verbs, ["get", "list"]);

    let missing: Api<Deployment> = Api::namespaced(client, "missing");
    let dep: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}},
    }))
    .unwrap();
    match missing.create(&PostParams::default(), &dep).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 404);
            assert!(e.message.contains(r#"namespaces "missing" not found"#), "{e:?}");
        }
        other => panic!("created in a missing namespace: {other:?}"),
    }
}
