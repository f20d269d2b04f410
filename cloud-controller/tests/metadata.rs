//! Auto-discovery: started without --project/--region/--zones, the controller asks the metadata
//! server (`GCE_METADATA_HOST`, here the fake GCE's) for project and zone, derives the region,
//! and builds load balancers in that project.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_and_zone_come_from_the_metadata_server() {
    // The fake answers the metadata paths itself (Metadata-Flavor: Google required).
    let gce = FakeGce::start(&[]);
    let md_host = format!("127.0.0.1:{}", gce.port);
    assert_eq!(
        svcnet_cloud_controller::metadata::get(&md_host, "project/project-id")
            .await
            .as_deref(),
        Some(PROJECT)
    );
    assert_eq!(
        svcnet_cloud_controller::metadata::get(&md_host, "no/such/path").await,
        None
    );

    let api_server = ApiServer::start();
    let client = api_server.client().await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    let args: Vec<String> = [
        "--kubeconfig",
        &api_server.kubeconfig().display().to_string(),
        "--gce-endpoint",
        &gce.endpoint(),
        "--node-tags",
        NODE_TAG,
        "--metrics-addr",
        "127.0.0.1:0",
        "--controllers",
        "service",
        "--gce-poll-ms",
        "50",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let _ctl = Controller::start_raw(args, &[("GCE_METADATA_HOST", md_host.as_str())]);
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(&PostParams::default(), &lb_service("md", &[80]))
        .await
        .unwrap();
    let (svc, _) = wait_ingress(&client, "md").await;
    let fr = gce
        .find("forwardingRules", &lb_name(&svc))
        .expect("LB built in the discovered project/region");
    assert!(
        fr["region"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/projects/{PROJECT}/regions/{REGION}")),
        "{fr}"
    );
}
