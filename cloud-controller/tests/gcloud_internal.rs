//! The real gcloud, pointed at the fake GCE after the controller built an internal load balancer,
//! reads it as on GCE: `forwarding-rules describe`, `backend-services describe --region`,
//! `health-checks describe`, `instance-groups unmanaged list-instances`. Prints `SKIPPED:` when
//! gcloud is not installed.
#![allow(clippy::unwrap_used)]

mod common;

use common::gcloud::{Gcloud, have_gcloud};
use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use serde_json::Value;

fn last(v: &Value) -> &str {
    v.as_str().and_then(|s| s.rsplit('/').next()).unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcloud_reads_an_internal_load_balancer() {
    if !have_gcloud("the gcloud internal LB test") {
        return;
    }
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    add_node(&client, &gce, "node-2", ZONE, None).await;
    let _ctl = Controller::start(&api_server, &gce, &[]);
    let cid = cluster_id(&client).await;
    let mut svc = lb_service("db", &[5432]);
    svc.metadata.annotations = Some(
        [(
            "networking.gke.io/load-balancer-type".to_owned(),
            "Internal".to_owned(),
        )]
        .into(),
    );
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services.create(&PostParams::default(), &svc).await.unwrap();
    let (svc, ip) = wait_ingress(&client, "db").await;
    let lb = lb_name(&svc);
    let g = Gcloud::new(&gce);

    let fr = g.value(&["compute", "forwarding-rules", "describe", &lb, "--region", REGION]);
    assert_eq!(fr["IPAddress"], ip.as_str());
    assert_eq!(fr["loadBalancingScheme"], "INTERNAL");
    assert_eq!(fr["IPProtocol"], "TCP");
    assert_eq!(fr["ports"], serde_json::json!(["5432"]));
    assert_eq!(last(&fr["backendService"]), lb);
    assert_eq!(last(&fr["subnetwork"]), "default");

    let bs = g.value(&["compute", "backend-services", "describe", &lb, "--region", REGION]);
    assert_eq!(bs["loadBalancingScheme"], "INTERNAL");
    assert_eq!(bs["protocol"], "TCP");
    assert_eq!(bs["sessionAffinity"], "NONE");
    assert_eq!(last(&bs["healthChecks"][0]), format!("k8s-{cid}-node"));
    assert_eq!(last(&bs["backends"][0]["group"]), format!("k8s-ig--{cid}"));

    let hc = g.value(&["compute", "health-checks", "describe", &format!("k8s-{cid}-node")]);
    assert_eq!(hc["type"], "HTTP");
    assert_eq!(hc["httpHealthCheck"]["port"], 10256);
    assert_eq!(hc["httpHealthCheck"]["requestPath"], "/healthz");

    let members = g.value(&[
        "compute",
        "instance-groups",
        "unmanaged",
        "list-instances",
        &format!("k8s-ig--{cid}"),
        "--zone",
        ZONE,
    ]);
    let mut names: Vec<&str> = members
        .as_array()
        .unwrap()
        .iter()
        .map(|m| last(&m["instance"]))
        .collect();
    names.sort();
    assert_eq!(names, ["node-1", "node-2"]);
    let groups = g.value(&["compute", "instance-groups", "unmanaged", "list"]);
    let groups = groups.as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0]["name"], format!("k8s-ig--{cid}"));
    assert_eq!(groups[0]["size"], 2);
    assert_eq!(last(&groups[0]["zone"]), ZONE);
}
