//! A node without a providerID still gets its route: the next hop is the instance of its name
//! in the cluster's zones (upstream CreateRoute -> getInstanceByName, providers/gce/gce_routes.go
//! and gce_instances.go), here found in the second zone.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, PostParams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_provider_id_is_routed_by_name() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    gce.add_instance("node-x", ZONE_C);
    let mut n = node("node-x", ZONE_C, Some("10.64.9.0/24"));
    n.spec.as_mut().unwrap().provider_id = None;
    let nodes: Api<Node> = Api::all(client.clone());
    let created = nodes.create(&PostParams::default(), &n).await.unwrap();
    // A node whose instance exists nowhere gets no route (and is reported, not guessed).
    let mut ghost = node("ghost", ZONE, Some("10.64.10.0/24"));
    ghost.spec.as_mut().unwrap().provider_id = None;
    nodes.create(&PostParams::default(), &ghost).await.unwrap();
    let _ctl = Controller::start(&api_server, &gce, &["--controllers", "route"]);

    let name = format!("{CLUSTER}-{}", created.metadata.uid.clone().unwrap());
    let route = eventually(&format!("route {name}"), WAIT, || async {
        gce.find("routes", &name)
    })
    .await;
    assert_eq!(route["destRange"], "10.64.9.0/24");
    let hop = route["nextHopInstance"].as_str().unwrap();
    assert!(
        hop.ends_with(&format!("zones/{ZONE_C}/instances/node-x")),
        "{hop}"
    );
    // Two more route syncs (2 s period): the existing route is kept, nothing for the ghost.
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(gce.names("routes"), [name]);
}
