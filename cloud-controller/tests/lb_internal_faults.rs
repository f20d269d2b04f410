//! Internal load balancers under GCE faults (503, 429, rate limits, operations that end DONE with
//! an error, slow operations) and controller kills mid-reconcile: the end state equals the
//! fault-free one, shared instance groups and the node check included, and nothing leaks.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, PostParams};

fn expected(lbs: &[String], cid: &str) -> Vec<String> {
    let mut out = Vec::new();
    for lb in lbs {
        out.push(format!("firewalls/k8s-fw-{lb}"));
        out.push(format!("backendServices/{lb}"));
        out.push(format!("forwardingRules/{lb}"));
    }
    if !lbs.is_empty() {
        out.push(format!("firewalls/k8s-{cid}-node-hc"));
        out.push(format!("healthChecks/k8s-{cid}-node"));
        // One group per zone with nodes (two zones).
        out.push(format!("instanceGroups/k8s-ig--{cid}"));
        out.push(format!("instanceGroups/k8s-ig--{cid}"));
    }
    out.sort();
    out
}

fn ilb_service(name: &str, port: i32) -> Service {
    let mut svc = lb_service(name, &[port]);
    svc.metadata.annotations = Some(
        [(
            "networking.gke.io/load-balancer-type".to_owned(),
            "Internal".to_owned(),
        )]
        .into(),
    );
    svc
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_lbs_converge_under_faults_and_kills_without_leaks() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&["--op-latency-ms", "300"]);
    let client = api_server.client().await;
    for (i, zone) in [ZONE, ZONE, ZONE_C].iter().enumerate() {
        add_node(&client, &gce, &format!("node-{i}"), zone, None).await;
    }
    gce.inject_api_faults(11);
    let mut ctl = Controller::start(&api_server, &gce, &["--gce-retries", "12"]);
    let cid = cluster_id(&client).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let names = ["db-0", "db-1"];
    for (i, name) in names.iter().enumerate() {
        services
            .create(&PostParams::default(), &ilb_service(name, 5432 + i as i32))
            .await
            .unwrap();
    }
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(1200)).await;
        ctl.kill();
        ctl.spawn();
    }
    let mut lbs = Vec::new();
    for name in names {
        let (svc, ip) = wait_long(&client, name).await;
        let lb = lb_name(&svc);
        let fr = gce.find("forwardingRules", &lb).expect("forwarding rule");
        assert_eq!(fr["IPAddress"], ip.as_str());
        assert_eq!(fr["loadBalancingScheme"], "INTERNAL");
        lbs.push(lb);
    }
    lbs.sort();
    eventually(
        "exactly the objects of two ILBs",
        Duration::from_secs(120),
        || async { (inventory(&gce, &TARGET_POOL_AND_ILB_KINDS) == expected(&lbs, &cid)).then_some(()) },
    )
    .await;
    let groups = gce.state()["instanceGroups"].clone();
    let mut sizes: Vec<u64> = groups
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["size"].as_u64().unwrap())
        .collect();
    sizes.sort();
    assert_eq!(sizes, [1, 2], "every node in its zone's group: {groups}");
    let hits: u64 = gce.admin("GET", "faults", None)["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["hits"].as_u64().unwrap_or(0))
        .sum();
    assert!(hits > 0, "faults were injected");

    // Delete both, killing the controller during the tear-down: nothing remains.
    for name in names {
        services.delete(name, &DeleteParams::default()).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    ctl.kill();
    ctl.spawn();
    for name in names {
        eventually(&format!("{name} gone"), Duration::from_secs(180), || {
            let services = services.clone();
            async move { services.get_opt(name).await.ok()?.is_none().then_some(()) }
        })
        .await;
    }
    eventually("no GCE objects left", Duration::from_secs(120), || async {
        inventory(&gce, &TARGET_POOL_AND_ILB_KINDS)
            .is_empty()
            .then_some(())
    })
    .await;
}

async fn wait_long(client: &kube::Client, name: &str) -> (Service, String) {
    wait_ingress_within(client, name, Duration::from_secs(360)).await
}
