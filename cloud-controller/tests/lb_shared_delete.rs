//! Deleting load balancers that share the node health check, against the real fake GCE: no
//! target pool is ever listed; the first delete tries the shared check after its pool is gone,
//! GCE answers 400 resourceInUseByAnotherResource, the controller counts it as kept and removes
//! the finalizer; the last delete removes the check and its firewall. A pool delete whose
//! operation ends DONE with an error stops the tear-down before the health check and keeps the
//! finalizer until a later sync succeeds.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

/// The fake's call log: (seq, method, path, status).
fn call_log(gce: &FakeGce) -> Vec<(u64, String, String, u64)> {
    gce.admin("GET", "calls", None)["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c: &Value| {
            (
                c["seq"].as_u64().unwrap(),
                c["method"].as_str().unwrap().to_owned(),
                c["path"].as_str().unwrap().to_owned(),
                c["status"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `targetPools.list` (and the aggregated list): a GET of the collection, not of one pool.
fn pool_lists(log: &[(u64, String, String, u64)]) -> Vec<String> {
    log.iter()
        .filter(|(_, m, p, _)| m == "GET" && p.trim_end_matches('/').ends_with("/targetPools"))
        .map(|(_, _, p, _)| p.clone())
        .collect()
}

async fn gone(services: &Api<Service>, name: &str) {
    eventually(&format!("Service {name} gone"), WAIT, || {
        let services = services.clone();
        let name = name.to_owned();
        async move { services.get_opt(&name).await.unwrap().is_none().then_some(()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_health_check_is_kept_until_the_last_lb_goes_without_listing_pools() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    let ctl = Controller::start(&api_server, &gce, &["--controllers", "service"]);
    let cid = cluster_id(&client).await;
    let hc = format!("k8s-{cid}-node");
    let hc_fw = format!("{hc}-http-hc");

    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    for name in ["a", "b"] {
        services
            .create(&PostParams::default(), &lb_service(name, &[80]))
            .await
            .unwrap();
    }
    let (svc_a, _) = wait_ingress(&client, "a").await;
    let (svc_b, _) = wait_ingress(&client, "b").await;
    let (lb_a, lb_b) = (lb_name(&svc_a), lb_name(&svc_b));

    // The first pool delete is accepted but its operation ends DONE with a (non-retryable) error.
    gce.admin(
        "POST",
        "faults",
        Some(
            &json!({"method": "DELETE", "pathRegex": format!("/targetPools/{lb_a}$"),
            "count": 1, "reason": "forbidden", "mode": "operation"}),
        ),
    );
    gce.clear_calls();
    services.delete("a", &DeleteParams::default()).await.unwrap();
    gone(&services, "a").await;

    let log = call_log(&gce);
    assert_eq!(
        pool_lists(&log),
        Vec::<String>::new(),
        "target pools listed on delete"
    );
    let pool_deletes: Vec<u64> = log
        .iter()
        .filter(|(_, m, p, _)| m == "DELETE" && p.ends_with(&format!("/targetPools/{lb_a}")))
        .map(|(seq, ..)| *seq)
        .collect();
    assert_eq!(pool_deletes.len(), 2, "failed once, then retried: {log:?}");
    let hc_deletes: Vec<&(u64, String, String, u64)> = log
        .iter()
        .filter(|(_, m, p, _)| m == "DELETE" && p.ends_with(&format!("/httpHealthChecks/{hc}")))
        .collect();
    assert_eq!(
        hc_deletes.len(),
        1,
        "tried once, after the pool was gone: {log:?}"
    );
    assert!(
        hc_deletes[0].0 > pool_deletes[1],
        "the shared check was tried before the pool delete succeeded: {log:?}"
    );
    assert_eq!(hc_deletes[0].3, 400, "GCE refused: in use by b's pool");
    assert!(
        !log.iter()
            .any(|(_, m, p, _)| m == "DELETE" && p.ends_with(&format!("/firewalls/{hc_fw}"))),
        "the shared check's firewall must stay while the check is used: {log:?}"
    );
    assert!(gce.find("httpHealthChecks", &hc).is_some(), "kept for b");
    assert!(gce.find("firewalls", &hc_fw).is_some(), "its firewall kept");
    let left: Vec<String> = lb_objects(&gce, &lb_a)
        .into_iter()
        .filter(|o| !o.ends_with(&hc) && !o.ends_with(&hc_fw) && !o.contains(&lb_b))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "objects of a left behind");
    let reasons = event_reasons(&client, "a").await;
    assert!(
        reasons.contains(&"SyncLoadBalancerFailed".to_owned()),
        "the failed pool delete was reported: {reasons:?}"
    );
    let text = ctl.metrics();
    assert!(
        text.contains(r#"gce_calls_total{call="delete_health_check",result="kept_in_use"} 1"#),
        "{text}"
    );

    // The last user: the check and its firewall go; still no listing.
    gce.clear_calls();
    services.delete("b", &DeleteParams::default()).await.unwrap();
    gone(&services, "b").await;
    let log = call_log(&gce);
    assert_eq!(
        pool_lists(&log),
        Vec::<String>::new(),
        "target pools listed on delete"
    );
    assert!(
        gce.find("httpHealthChecks", &hc).is_none(),
        "last user removes it"
    );
    assert!(gce.find("firewalls", &hc_fw).is_none(), "and its firewall");
    assert_eq!(
        lb_objects(&gce, &lb_b),
        Vec::<String>::new(),
        "objects left behind"
    );
    let text = ctl.metrics();
    assert!(
        text.contains(r#"gce_calls_total{call="delete_health_check",result="ok"} 1"#),
        "{text}"
    );
}
