//! Robustness: GCE failing a fraction of calls (503, 429, 403 rateLimitExceeded, operations that
//! end DONE with an error), slow operations, and the controller SIGKILLed and restarted in the
//! middle of reconciling. The end state must equal the fault-free one and nothing may leak.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

fn expected(lbs: &[String], cid: &str) -> Vec<String> {
    let mut out = Vec::new();
    for lb in lbs {
        // No address: the reservation is released once the forwarding rule holds the IP.
        out.push(format!("firewalls/k8s-fw-{lb}"));
        out.push(format!("targetPools/{lb}"));
        out.push(format!("forwardingRules/{lb}"));
    }
    if !lbs.is_empty() {
        out.push(format!("firewalls/k8s-{cid}-node-http-hc"));
        out.push(format!("httpHealthChecks/k8s-{cid}-node"));
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_and_restarts_converge_without_leaks() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&["--op-latency-ms", "300"]);
    let client = api_server.client().await;
    install_crd(&client).await;
    for (i, zone) in [ZONE, ZONE, ZONE_C].iter().enumerate() {
        add_node(&client, &gce, &format!("node-{i}"), zone, None).await;
    }
    gce.inject_api_faults(7);

    let mut ctl = Controller::start(&api_server, &gce, &["--gce-retries", "12"]);
    let t0 = std::time::Instant::now();
    let cid = cluster_id(&client).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let mut names = Vec::new();
    for i in 0..3 {
        let name = format!("svc-{i}");
        services
            .create(&PostParams::default(), &lb_service(&name, &[80 + i]))
            .await
            .unwrap();
        names.push(name);
    }
    // Kill it mid-reconcile (operations take 300 ms each, so work is in flight), twice.
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(1200)).await;
        ctl.kill();
        ctl.spawn();
    }
    let mut lbs = Vec::new();
    for name in &names {
        let (svc, ip) = wait_ingress_faulty(&client, name).await;
        let lb = lb_name(&svc);
        let fr = gce.find("forwardingRules", &lb).expect("forwarding rule");
        assert_eq!(fr["IPAddress"], ip.as_str());
        lbs.push(lb);
    }
    eprintln!("three ingress IPs after {:.1} s", t0.elapsed().as_secs_f64());
    lbs.sort();
    eventually(
        "exactly the objects of three LBs",
        Duration::from_secs(120),
        || async { (inventory(&gce, &TARGET_POOL_KINDS) == expected(&lbs, &cid)).then_some(()) },
    )
    .await;
    for lb in &lbs {
        let pool = gce.find("targetPools", lb).unwrap();
        assert_eq!(pool["instances"].as_array().unwrap().len(), 3, "{pool}");
    }
    eprintln!("three LBs exactly after {:.1} s", t0.elapsed().as_secs_f64());
    let hits: u64 = gce.admin("GET", "faults", None)["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["hits"].as_u64().unwrap_or(0))
        .sum();
    assert!(hits > 0, "faults were injected");

    // Delete two Services and kill the controller during the tear-down.
    for name in &names[..2] {
        services.delete(name, &DeleteParams::default()).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    ctl.kill();
    ctl.spawn();
    for name in &names[..2] {
        eventually(&format!("{name} gone"), Duration::from_secs(120), || {
            let services = services.clone();
            async move { services.get_opt(name).await.ok()?.is_none().then_some(()) }
        })
        .await;
    }
    let (svc, _) = wait_ingress(&client, &names[2]).await;
    let left = vec![lb_name(&svc)];
    eventually(
        "only the third LB's objects remain",
        Duration::from_secs(120),
        || async { (inventory(&gce, &TARGET_POOL_KINDS) == expected(&left, &cid)).then_some(()) },
    )
    .await;

    // And the last one: nothing at all remains.
    services
        .delete(&names[2], &DeleteParams::default())
        .await
        .unwrap();
    eventually("no GCE objects left", Duration::from_secs(120), || async {
        inventory(&gce, &TARGET_POOL_KINDS).is_empty().then_some(())
    })
    .await;
    eprintln!("all torn down after {:.1} s", t0.elapsed().as_secs_f64());
}

/// Waits for the ingress IP under faults. Every call fails with p = 0.35 here, so a chain of ~20
/// calls per LB meets a few streaks of 3-5 failures, each backing off 2-15 s; convergence takes
/// 20-40 s on a loaded 2-core machine. The 120 s bound holds because a failed operation is retried
/// with a new requestId (see the test below) instead of being replayed until --gce-retries run out.
async fn wait_ingress_faulty(client: &kube::Client, name: &str) -> (Service, String) {
    wait_ingress_within(client, name, Duration::from_secs(120)).await
}

/// An operation that ends DONE with an error is retried at once with a new requestId: GCE (and the
/// fake) answers the old id with that same failed operation, so the executor's retries used to
/// replay the failure with growing backoff (12 retries: over 100 s) before the sync gave up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_operation_is_retried_with_a_new_request_id() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-0", ZONE, None).await;
    gce.admin(
        "POST",
        "faults",
        Some(
            &json!({"count": 1, "status": 503, "mode": "operation", "method": "POST",
            "pathRegex": "/forwardingRules$"}),
        ),
    );
    let _ctl = Controller::start(
        &api_server,
        &gce,
        &["--controllers", "service", "--gce-retries", "12"],
    );
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(&PostParams::default(), &lb_service("svc", &[80]))
        .await
        .unwrap();
    let t0 = std::time::Instant::now();
    let (svc, ip) = eventually(
        "ingress IP despite a failed operation",
        Duration::from_secs(20),
        || {
            let services = services.clone();
            async move {
                let s = services.get("svc").await.ok()?;
                let ip = ingress_ip(&s)?;
                Some((s, ip))
            }
        },
    )
    .await;
    eprintln!("ingress after {:.1} s", t0.elapsed().as_secs_f64());
    let fr = gce.find("forwardingRules", &lb_name(&svc)).unwrap();
    assert_eq!(fr["IPAddress"], ip.as_str());
    let calls = gce.admin("GET", "calls", None);
    let ids: Vec<String> = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["method"] == "POST" && c["path"].as_str().unwrap().ends_with("/forwardingRules"))
        .filter_map(|c| {
            c["query"]
                .as_str()?
                .split('&')
                .find_map(|kv| kv.strip_prefix("requestId="))
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(ids.len(), 2, "one failed insert, one retry: {calls}");
    assert_ne!(
        ids[0], ids[1],
        "the retry reused the failed operation's requestId"
    );
}
