//! The client-side token buckets keep the controller under GCE's rate quota: against a fake that
//! admits 10 calls per second (all calls alike), an unlimited controller runs into 403
//! rateLimitExceeded (and still converges by backing off), while one limited to 4/s per quota
//! group (reads and writes: at most 8/s together; no operation polls, the fake's operations are DONE
//! at once) with burst 1 never does.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use serde_json::json;

/// Builds three LBs with the given controller flags; returns the number of rate-limited calls.
async fn rate_limited_calls(extra: &[&str]) -> usize {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    gce.admin("POST", "rate-limit", Some(&json!({"perSecond": 10})));
    let args = [&["--controllers", "service"][..], extra].concat();
    let _ctl = Controller::start(&api_server, &gce, &args);
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    for i in 0..3 {
        services
            .create(&PostParams::default(), &lb_service(&format!("s{i}"), &[80]))
            .await
            .unwrap();
    }
    for i in 0..3 {
        wait_ingress(&client, &format!("s{i}")).await;
    }
    let log = gce.admin("GET", "calls", None);
    log["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == 403)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_bucket_stays_under_the_gce_rate_quota() {
    let unlimited = rate_limited_calls(&["--gce-qps", "0"]).await;
    assert!(
        unlimited > 0,
        "without the limiter the fake's quota is hit (else this test proves nothing)"
    );
    let limited = rate_limited_calls(&["--gce-qps", "4", "--gce-burst", "1"]).await;
    assert_eq!(limited, 0, "the limited controller exceeded the quota");
}
