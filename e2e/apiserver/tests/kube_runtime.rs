//! kube-runtime machinery the cloud controller uses: Controller, the finalizer helper and the events Recorder.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Server, eventually};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::{Resource, ResourceExt};
use serde_json::json;

const FINALIZER: &str = "example.com/cleanup";

struct Ctx {
    api: Api<ConfigMap>,
    recorder: Recorder,
    cleaned: Mutex<Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failed(String);

async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Failed> {
    let api = ctx.api.clone();
    finalizer(&api, FINALIZER, cm, |ev| async {
        match ev {
            Finalizer::Apply(cm) => {
                let patch = json!({"metadata": {"annotations": {"reconciled": "yes"}}});
                api.patch(&cm.name_any(), &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map_err(|e| Failed(e.to_string()))?;
                let ev = Event {
                    type_: EventType::Normal,
                    reason: "Reconciled".into(),
                    note: Some("seen by the test controller".into()),
                    action: "Reconcile".into(),
                    secondary: None,
                };
                // Publish twice: the second goes out as a merge patch of the event series.
                for _ in 0..2 {
                    ctx.recorder
                        .publish(&ev, &cm.object_ref(&()))
                        .await
                        .map_err(|e| Failed(e.to_string()))?;
                }
                Ok::<_, Failed>(Action::await_change())
            }
            Finalizer::Cleanup(cm) => {
                ctx.cleaned.lock().unwrap().push(cm.name_any());
                Ok::<_, Failed>(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| Failed(e.to_string()))
}

#[tokio::test]
async fn controller_with_finalizer_and_events() {
    let s = Server::start(&[]);
    let client = s.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let reporter = Reporter {
        controller: "svcnet-test".into(),
        instance: None,
    };
    let ctx = Arc::new(Ctx {
        api: api.clone(),
        recorder: Recorder::new(client.clone(), reporter),
        cleaned: Mutex::new(Vec::new()),
    });
    let controller = Controller::new(api.clone(), Default::default())
        .run(
            reconcile,
            |_, _, _| Action::requeue(Duration::from_millis(200)),
            ctx.clone(),
        )
        .for_each(|_| async {});
    let handle = tokio::spawn(controller);

    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "target"}, "data": {"a": "b"}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    let mut reconciled = None;
    for _ in 0..200 {
        let got = api.get("target").await.unwrap();
        if got.annotations().get("reconciled").map(String::as_str) == Some("yes") {
            reconciled = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = reconciled.expect("controller reconciled the object");
    assert_eq!(got.finalizers(), [FINALIZER]);

    let events: Api<K8sEvent> = Api::namespaced(client.clone(), "default");
    let mut found = None;
    for _ in 0..100 {
        let list = events.list(&ListParams::default()).await.unwrap();
        found = list
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("Reconciled"));
        if found.as_ref().is_some_and(|e| e.series.is_some()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ev = found.expect("Reconciled event recorded");
    assert_eq!(
        ev.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("target")
    );
    assert_eq!(ev.reporting_controller.as_deref(), Some("svcnet-test"));
    assert!(ev.series.is_some(), "second publish patched the series");
    // events.k8s.io and core events share storage, as upstream: kubectl describe sees Recorder events.
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), "default");
    let core_ev = core.get(ev.metadata.name.as_deref().unwrap()).await.unwrap();
    assert_eq!(core_ev.involved_object.name.as_deref(), Some("target"));
    assert_eq!(core_ev.message.as_deref(), Some("seen by the test controller"));
    assert_eq!(core_ev.reporting_component.as_deref(), Some("svcnet-test"));
    assert!(
        core_ev.series.as_ref().and_then(|s| s.count).unwrap() >= 2,
        "{core_ev:?}"
    );

    // Deletion runs the cleanup branch, which removes the finalizer, and the object goes away.
    api.delete("target", &DeleteParams::default()).await.unwrap();
    let cleaned = ctx.clone();
    eventually("cleanup ran", Duration::from_secs(15), move || {
        cleaned.cleaned.lock().unwrap().contains(&"target".to_string())
    })
    .await;
    let mut gone = false;
    for _ in 0..100 {
        if api.get_opt("target").await.unwrap().is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "object removed once the finalizer was dropped");
    handle.abort();
}
