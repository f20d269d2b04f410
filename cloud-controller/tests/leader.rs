//! Two replicas against one API server and one GCE: only the Lease holder calls GCE; the standby
//! makes no call at all while it waits; killing the leader hands over, and the new leader both
//! keeps existing load balancers (no mutating call) and builds new ones.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};

async fn holder(client: &kube::Client) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    leases
        .get_opt("svcnet-cloud-controller")
        .await
        .ok()??
        .spec?
        .holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_calls_gce_and_a_standby_takes_over() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    // Only the service controller: it makes no call without a reason (no periodic route sync).
    let only_lb = ["--controllers", "service"];
    let mut a = Controller::start(
        &api_server,
        &gce,
        &[&only_lb[..], &["--leader-elect-identity", "replica-a"]].concat(),
    );
    eventually("replica-a leads", WAIT, || {
        let client = client.clone();
        async move { (holder(&client).await.as_deref() == Some("replica-a")).then_some(()) }
    })
    .await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(&PostParams::default(), &lb_service("first", &[80]))
        .await
        .unwrap();
    let (svc, _) = wait_ingress(&client, "first").await;
    let first_lb = lb_name(&svc);

    // The standby starts and waits: no GCE call at all from it (the idle leader makes none).
    tokio::time::sleep(Duration::from_millis(500)).await;
    gce.clear_calls();
    let _b = Controller::start(
        &api_server,
        &gce,
        &[&only_lb[..], &["--leader-elect-identity", "replica-b"]].concat(),
    );
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        holder(&client).await.as_deref(),
        Some("replica-a"),
        "the lease was not stolen"
    );
    let (total, _) = gce.calls();
    assert_eq!(
        total,
        0,
        "a replica that is not the leader called GCE: {:?}",
        gce.mutating_calls()
    );

    // Kill the leader: the standby takes the lease after it expires and resumes.
    a.kill();
    eventually("replica-b leads", WAIT, || {
        let client = client.clone();
        async move { (holder(&client).await.as_deref() == Some("replica-b")).then_some(()) }
    })
    .await;
    // Its first pass over the existing LB reads GCE but changes nothing.
    eventually("replica-b resynced the existing LB", WAIT, || async {
        (gce.calls().0 > 0).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(gce.calls().1, 0, "takeover mutated: {:?}", gce.mutating_calls());
    services
        .create(&PostParams::default(), &lb_service("second", &[8080]))
        .await
        .unwrap();
    let (svc, ip) = wait_ingress(&client, "second").await;
    let fr = gce
        .find("forwardingRules", &lb_name(&svc))
        .expect("the new leader built the LB");
    assert_eq!(fr["IPAddress"], ip.as_str());
    assert!(gce.find("forwardingRules", &first_lb).is_some());
}
