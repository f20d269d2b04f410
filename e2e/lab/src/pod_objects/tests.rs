use std::slice::from_ref;

use serde_json::{Value, json};

use super::{FINALIZER, Write, object, plan, status};
use crate::state::{Node, Pod};

const T0: &str = "2025-01-02T03:04:05Z";

fn pod(name: &str, ip: &str, node: &str) -> Pod {
    Pod {
        name: name.into(),
        app: "hostnames".into(),
        ip: ip.into(),
        node: node.into(),
        port: 9376,
        ..Pod::default()
    }
}

fn nodes() -> Vec<Node> {
    (1..=2)
        .map(|i| Node {
            name: format!("node-{i}"),
            ip: format!("10.128.0.{}", i + 1),
            index: i,
            ..Node::default()
        })
        .collect()
}

/// What the API holds after the create: the object, a creationTimestamp, and `status`.
fn stored(p: &Pod, status: Value) -> Value {
    let mut o = object(p);
    o["metadata"]["creationTimestamp"] = json!(T0);
    o["metadata"]["resourceVersion"] = json!("7");
    o["status"] = status;
    o
}

#[test]
fn the_pod_object_has_the_app_label_node_finalizer_and_both_ports() {
    let o = object(&pod("hostnames-00001", "10.64.1.10", "node-1"));
    assert_eq!(o["metadata"]["name"], "hostnames-00001");
    assert_eq!(o["metadata"]["namespace"], "default");
    assert_eq!(o["metadata"]["labels"], json!({"app": "hostnames"}));
    assert_eq!(o["metadata"]["finalizers"], json!([FINALIZER]));
    assert_eq!(o["spec"]["nodeName"], "node-1");
    let c = &o["spec"]["containers"][0];
    assert_eq!(c["name"], "serve-hostname");
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 9376, "protocol": "TCP"}, {"containerPort": 9376, "protocol": "UDP"}])
    );
    assert!(o.get("status").is_none(), "status goes through /status");
}

#[test]
fn the_status_is_running_and_ready_with_pod_and_host_ips() {
    let s = status(&pod("hostnames-00002", "10.64.2.11", "node-2"), "10.128.0.3", T0);
    assert_eq!(s["phase"], "Running");
    assert_eq!(s["podIP"], "10.64.2.11");
    assert_eq!(s["podIPs"], json!([{"ip": "10.64.2.11"}]));
    assert_eq!(s["hostIP"], "10.128.0.3");
    assert_eq!(s["startTime"], T0);
    for ty in ["Ready", "ContainersReady", "PodScheduled", "Initialized"] {
        let c = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == ty)
            .unwrap_or_else(|| panic!("no {ty} condition"));
        assert_eq!(c["status"], "True", "{ty}");
    }
    let cs = &s["containerStatuses"][0];
    assert_eq!(cs["name"], "serve-hostname");
    assert_eq!(
        (cs["ready"].clone(), cs["restartCount"].clone()),
        (json!(true), json!(0))
    );
    assert_eq!(cs["state"]["running"]["startedAt"], T0);
}

#[test]
fn a_new_pod_is_created_then_gets_its_status_then_nothing_changes() {
    let p = pod("hostnames-00001", "10.64.1.10", "node-1");
    assert_eq!(plan(from_ref(&p), &nodes(), &[]), [Write::Create(object(&p))]);
    // The API reset the status to Pending on create: the kubelet's status goes through /status.
    let created = stored(&p, json!({"phase": "Pending"}));
    let writes = plan(from_ref(&p), &nodes(), &[created]);
    let [Write::Status(body)] = writes.as_slice() else {
        panic!("{writes:?}");
    };
    assert_eq!(body["status"], status(&p, "10.128.0.2", T0));
    assert_eq!(
        body["metadata"]["resourceVersion"], "7",
        "conditional on what was read"
    );
    let running = stored(&p, status(&p, "10.128.0.2", T0));
    assert_eq!(plan(&[p], &nodes(), &[running]), []);
}

#[test]
fn a_terminating_pod_is_deleted_once_and_released_when_gone_from_the_state() {
    let mut p = pod("hostnames-00002", "10.64.2.11", "node-2");
    p.terminating = true;
    let running = stored(&p, status(&p, "10.128.0.3", T0));
    assert_eq!(
        plan(from_ref(&p), &nodes(), from_ref(&running)),
        [Write::Delete("hostnames-00002".into())]
    );
    let mut deleted = running;
    deleted["metadata"]["deletionTimestamp"] = json!("2025-01-02T03:05:00Z");
    assert_eq!(
        plan(&[p], &nodes(), &[deleted.clone()]),
        [],
        "kept while terminating"
    );
    // Gone from the state: the lab's finalizer is removed, others stay.
    deleted["metadata"]["finalizers"] = json!(["example.com/other", FINALIZER]);
    let writes = plan(&[], &nodes(), &[deleted]);
    let [Write::Release(body)] = writes.as_slice() else {
        panic!("{writes:?}");
    };
    assert_eq!(body["metadata"]["finalizers"], json!(["example.com/other"]));
    assert_eq!(body["metadata"]["resourceVersion"], "7");
}

#[test]
fn stale_lab_pods_are_deleted_first_and_foreign_pods_are_left_alone() {
    let gone = pod("hostnames-00003", "10.64.1.12", "node-1");
    let stale = stored(&gone, status(&gone, "10.128.0.2", T0));
    let mut foreign = stale.clone();
    foreign["metadata"]["name"] = json!("someone-elses");
    foreign["metadata"]["finalizers"] = json!([]);
    assert_eq!(
        plan(&[], &nodes(), &[stale, foreign]),
        [Write::Delete("hostnames-00003".into())]
    );
    // A terminating pod that has no object yet gets none; a pod on an unknown node neither.
    let mut going = pod("hostnames-00004", "10.64.2.13", "node-2");
    going.terminating = true;
    let orphan = pod("hostnames-00005", "10.64.3.14", "node-3");
    assert_eq!(plan(&[going, orphan], &nodes(), &[]), []);
}
