//! A failure while waiting for an operation is retried by polling again, never by sending the
//! mutation again; every mutating call carries a `requestId` (GCE's retry contract), and the
//! fake answers a repeated one with the first operation.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

fn calls_matching(gce: &FakeGce, verb: &str) -> Vec<Value> {
    let v = gce.admin("GET", "calls", None);
    v["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["mutating"] == true && c["path"].as_str().unwrap_or("").ends_with(verb))
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_operation_poll_sends_no_second_mutation() {
    let api_server = ApiServer::start();
    // Operations take long enough to be polled.
    let gce = FakeGce::start(&["--op-latency-ms", "300"]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    add_node(&client, &gce, "node-2", ZONE, None).await;
    let _ctl = Controller::start(&api_server, &gce, &["--controllers", "service"]);
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(&PostParams::default(), &lb_service("idem", &[80]))
        .await
        .unwrap();
    let (svc, _) = wait_ingress(&client, "idem").await;
    let lb = lb_name(&svc);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let all = gce.admin("GET", "calls", None);
    for c in all["calls"].as_array().into_iter().flatten() {
        if c["mutating"] == true {
            assert!(
                c["query"].as_str().unwrap_or("").contains("requestId="),
                "mutating call without requestId: {c}"
            );
        }
    }

    // The next operation poll fails with 429 (the client's default policy gives up on it).
    gce.clear_calls();
    let fault = gce.admin(
        "POST",
        "faults",
        Some(&json!({"method": "GET", "pathRegex": "/operations/", "count": 1, "status": 429})),
    );
    assert!(fault["id"].is_string() || fault["id"].is_number(), "{fault}");
    let nodes: Api<Node> = Api::all(client.clone());
    nodes.delete("node-2", &DeleteParams::default()).await.unwrap();
    eventually("node-2 out of the pool", WAIT, || async {
        let pool = gce.find("targetPools", &lb)?;
        let members = pool["instances"].as_array()?.len();
        (members == 1).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let faults = gce.admin("GET", "faults", None);
    let hits: u64 = faults["faults"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["hits"].as_u64())
        .sum();
    assert_eq!(hits, 1, "the poll fault fired: {faults}");
    let removes = calls_matching(&gce, "/removeInstance");
    assert_eq!(removes.len(), 1, "removeInstance sent again: {removes:?}");
    let reasons = event_reasons(&client, "idem").await;
    assert!(
        !reasons.contains(&"SyncLoadBalancerFailed".to_owned()),
        "Warning after a transient poll failure: {reasons:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_request_id_returns_the_first_operation() {
    let gce = FakeGce::start(&[]);
    let path = format!(
        "/compute/v1/projects/{PROJECT}/global/firewalls?requestId=7b0c3f8e-4d1a-4c2b-9e5f-0a1b2c3d4e5f"
    );
    let fw = json!({"name": "k8s-fw-idem", "allowed": [{"IPProtocol": "tcp", "ports": ["80"]}],
        "sourceRanges": ["0.0.0.0/0"]});
    let (s1, op1) = gce.call("POST", &path, Some(&fw));
    assert_eq!(s1, 200, "{op1}");
    gce.call(
        "DELETE",
        &format!("/compute/v1/projects/{PROJECT}/global/firewalls/k8s-fw-idem"),
        None,
    );
    // The retry of the insert (same id) is the first operation again, not a new firewall.
    let (s2, op2) = gce.call("POST", &path, Some(&fw));
    assert_eq!(s2, 200, "{op2}");
    assert_eq!(op1["name"], op2["name"]);
    assert!(gce.find("firewalls", "k8s-fw-idem").is_none());
}
