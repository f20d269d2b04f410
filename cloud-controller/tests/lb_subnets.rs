//! An internal LB whose subnet annotation names a subnetwork that does not exist: GCE (the fake)
//! refuses the address, the Service gets a Warning event naming the annotation and the
//! subnetwork, and no LB object is left half made; once the subnetwork exists the LB converges
//! with an IP from its range.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use serde_json::json;

const SUBNET: &str = "networking.gke.io/internal-load-balancer-subnet";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_subnet_is_a_clear_warning_then_converges_once_created() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    let _ctl = Controller::start(&api_server, &gce, &["--controllers", "service"]);
    cluster_id(&client).await;

    let mut svc = lb_service("db", &[5432]);
    svc.metadata.annotations = Some(
        [
            (
                "networking.gke.io/load-balancer-type".to_owned(),
                "Internal".to_owned(),
            ),
            (SUBNET.to_owned(), "ilb-subnet".to_owned()),
        ]
        .into(),
    );
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services.create(&PostParams::default(), &svc).await.unwrap();
    let note = eventually("Warning naming the subnet annotation", WAIT, || {
        let client = client.clone();
        async move {
            warnings(&client, "db")
                .await
                .into_iter()
                .find(|n| n.contains("ilb-subnet"))
        }
    })
    .await;
    assert!(
        note.contains("Service default/db")
            && note.contains(&format!("metadata.annotations[{SUBNET}]"))
            && note.contains("subnetwork \"ilb-subnet\" does not exist"),
        "{note}"
    );
    // Nothing got an IP from another subnet: no address, no forwarding rule.
    assert!(gce.names("addresses").is_empty(), "{:?}", gce.names("addresses"));
    assert!(gce.names("forwardingRules").is_empty());
    assert_eq!(ingress_ip(&services.get("db").await.unwrap()), None);

    // The subnet appears: the next sync builds the LB in it.
    let (s, body) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/regions/{REGION}/subnetworks"),
        Some(&json!({"name": "ilb-subnet", "network": "default", "ipCidrRange": "10.50.0.0/24"})),
    );
    assert_eq!(s, 200, "{body}");
    let (_, ip) = wait_ingress(&client, "db").await;
    assert!(ip.starts_with("10.50.0."), "IP from the annotated subnet: {ip}");
}
