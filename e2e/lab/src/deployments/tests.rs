use serde_json::{Value, json};

use super::{App, OWNED, Write, apps, object, plan, status};
use crate::state::Pod;

fn pod(name: &str, app: &str, terminating: bool) -> Pod {
    Pod {
        name: name.into(),
        app: app.into(),
        port: 9376,
        terminating,
        ..Pod::default()
    }
}

/// The object as the API stores it: a generation and a status.
fn stored(name: &str, replicas: usize, generation: i64, st: Value) -> Value {
    let mut o = object(name, &App { port: 9376, replicas });
    o["metadata"]["generation"] = json!(generation);
    o["metadata"]["resourceVersion"] = json!("9");
    o["status"] = st;
    o
}

#[test]
fn apps_count_the_pods_that_are_not_terminating() {
    let a = apps(&[
        pod("hostnames-00001", "hostnames", false),
        pod("hostnames-00002", "hostnames", true),
        pod("web-00003", "web", false),
    ]);
    assert_eq!(a.len(), 2);
    assert_eq!(
        a["hostnames"],
        App {
            port: 9376,
            replicas: 1
        }
    );
    assert_eq!(a["web"].replicas, 1);
}

#[test]
fn the_deployment_selects_its_pods_by_app_label_as_kubectl_expose_needs() {
    let o = object(
        "hostnames",
        &App {
            port: 9376,
            replicas: 2,
        },
    );
    assert_eq!(o["metadata"]["labels"], json!({"app": "hostnames"}));
    assert_eq!(
        o["spec"]["selector"],
        json!({"matchLabels": {"app": "hostnames"}})
    );
    assert_eq!(
        o["spec"]["template"]["metadata"]["labels"],
        json!({"app": "hostnames"})
    );
    assert_eq!(o["spec"]["replicas"], 2);
    assert!(o["metadata"]["annotations"][OWNED].is_string());
    assert!(o.get("status").is_none(), "status goes through /status");
}

#[test]
fn a_new_app_is_created_then_its_status_written_for_the_stored_generation() {
    let pods = [pod("hostnames-00001", "hostnames", false)];
    let w = plan(&pods, &[]);
    assert_eq!(
        w,
        vec![Write::Create(object(
            "hostnames",
            &App {
                port: 9376,
                replicas: 1
            }
        ))]
    );

    let fresh = stored("hostnames", 1, 1, Value::Null);
    let Some(Write::Status(body)) = plan(&pods, &[fresh]).pop() else {
        panic!("expected a status write");
    };
    assert_eq!(body["status"], status(1, 1));
    assert_eq!(body["status"]["readyReplicas"], 1);

    let done = stored("hostnames", 1, 1, status(1, 1));
    assert!(plan(&pods, &[done]).is_empty(), "nothing to write once mirrored");
}

#[test]
fn a_scale_changes_the_replicas_first_and_the_status_after() {
    let pods = [
        pod("hostnames-00001", "hostnames", false),
        pod("hostnames-00002", "hostnames", false),
    ];
    let one = stored("hostnames", 1, 1, status(1, 1));
    let Some(Write::Scale(body)) = plan(&pods, &[one]).pop() else {
        panic!("expected a scale");
    };
    assert_eq!(body["spec"]["replicas"], 2);
    assert_eq!(body["metadata"]["resourceVersion"], "9", "a conditional write");
    let scaled = stored("hostnames", 2, 2, status(1, 1));
    let Some(Write::Status(body)) = plan(&pods, &[scaled]).pop() else {
        panic!("expected a status write");
    };
    assert_eq!(body["status"]["observedGeneration"], 2);
    assert_eq!(body["status"]["replicas"], 2);
}

#[test]
fn only_mirrored_deployments_are_deleted_and_others_never_touched() {
    let mine = stored("gone", 1, 1, status(1, 1));
    let mut theirs = stored("hostnames", 3, 1, json!({}));
    theirs["metadata"]["annotations"] = json!({});
    let pods = [pod("hostnames-00001", "hostnames", false)];
    assert_eq!(plan(&pods, &[mine, theirs]), vec![Write::Delete("gone".into())]);
}
