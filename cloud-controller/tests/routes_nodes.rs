//! Route controller and node controller against the real binaries: routes for node pod CIDRs
//! (and gone with the node), NetworkUnavailable=False/RouteCreated, initialisation of a node
//! tainted uninitialized, and deletion of a NotReady node whose instance is gone.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

fn route_name(node: &Node) -> String {
    format!("{CLUSTER}-{}", node.metadata.uid.clone().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_follow_nodes_and_condition_is_set() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    let n1 = add_node(&client, &gce, "node-1", ZONE, Some("10.64.1.0/24")).await;
    let n2 = add_node(&client, &gce, "node-2", ZONE_C, Some("10.64.2.0/24")).await;
    add_node(&client, &gce, "node-nocidr", ZONE, None).await;
    let _ctl = Controller::start(&api_server, &gce, &["--controllers", "route"]);

    for (n, cidr, zone) in [(&n1, "10.64.1.0/24", ZONE), (&n2, "10.64.2.0/24", ZONE_C)] {
        let name = route_name(n);
        let r = eventually(&format!("route {name}"), WAIT, || async {
            gce.find("routes", &name)
        })
        .await;
        assert_eq!(r["destRange"], cidr);
        assert_eq!(r["priority"].as_u64(), Some(1000));
        assert_eq!(r["description"], "k8s-node-route");
        let hop = r["nextHopInstance"].as_str().unwrap();
        let node_name = n.metadata.name.clone().unwrap();
        assert!(
            hop.ends_with(&format!("/zones/{zone}/instances/{node_name}")),
            "{hop}"
        );
        assert!(
            r["network"]
                .as_str()
                .unwrap()
                .ends_with("/global/networks/default")
        );
    }
    assert_eq!(
        gce.names("routes").len(),
        2,
        "no route for a node without podCIDR"
    );

    let nodes: Api<Node> = Api::all(client.clone());
    for name in ["node-1", "node-2"] {
        let cond = eventually(&format!("NetworkUnavailable on {name}"), WAIT, || {
            let nodes = nodes.clone();
            async move {
                let n = nodes.get(name).await.ok()?;
                n.status?
                    .conditions?
                    .into_iter()
                    .find(|c| c.type_ == "NetworkUnavailable")
            }
        })
        .await;
        assert_eq!(cond.status, "False");
        assert_eq!(cond.reason.as_deref(), Some("RouteCreated"));
    }
    let n3 = nodes.get("node-nocidr").await.unwrap();
    assert!(
        !n3.status
            .unwrap()
            .conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "NetworkUnavailable"),
        "no condition for a node without a route"
    );

    // The node goes: its route goes; a stale route of ours (no such node) goes too.
    let stale = json!({"name": format!("{CLUSTER}-0000-gone"), "network": "global/networks/default",
        "destRange": "10.64.99.0/24", "description": "k8s-node-route", "priority": 1000,
        "nextHopInstance": format!("zones/{ZONE}/instances/node-1")});
    let (s, v) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/global/routes"),
        Some(&stale),
    );
    assert_eq!(s, 200, "{v}");
    let foreign = json!({"name": "user-route", "network": "global/networks/default", "destRange": "10.99.0.0/24",
        "nextHopInstance": format!("zones/{ZONE}/instances/node-1")});
    let (s, v) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/global/routes"),
        Some(&foreign),
    );
    assert_eq!(s, 200, "{v}");
    nodes.delete("node-2", &DeleteParams::default()).await.unwrap();
    let n2_route = route_name(&n2);
    let n1_route = route_name(&n1);
    eventually("route of node-2 and the stale route deleted", WAIT, || async {
        let names = gce.names("routes");
        (names == [n1_route.clone(), "user-route".to_owned()]
            || names == ["user-route".to_owned(), n1_route.clone()])
        .then_some(())
    })
    .await;
    assert!(gce.find("routes", &n2_route).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninitialized_node_is_initialized_and_vanished_instance_deletes_not_ready_node() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    let inst = gce.admin(
        "POST",
        "instances",
        Some(
            &json!({"name": "fresh", "zone": ZONE_C, "tags": [NODE_TAG], "machineType": "e2-standard-4",
            "natIP": "198.51.100.7"}),
        ),
    );
    let internal = inst["networkInterfaces"][0]["networkIP"]
        .as_str()
        .unwrap()
        .to_owned();
    let nodes: Api<Node> = Api::all(client.clone());
    let fresh: Node = serde_json::from_value(json!({
        "metadata": {"name": "fresh"},
        "spec": {"taints": [
            {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
        ]},
        "status": {"addresses": [{"type": "Hostname", "address": "fresh"}],
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap();
    let created = nodes.create(&PostParams::default(), &fresh).await.unwrap();
    // The API server's TaintNodesByCondition admission adds node.kubernetes.io/not-ready on create
    // (node lifecycle, not running here, would lift it): only the uninitialized taint is the
    // controller's to remove, every other one must stay.
    let mut kept: Vec<String> = created
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .into_iter()
        .map(|t| t.key)
        .filter(|k| k != "node.cloudprovider.kubernetes.io/uninitialized")
        .collect();
    kept.sort();
    assert!(kept.contains(&"dedicated".to_owned()), "{kept:?}");
    // A NotReady node whose VM was deleted.
    gce.add_instance("doomed", ZONE);
    let mut doomed = node("doomed", ZONE, None);
    doomed.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
    nodes.create(&PostParams::default(), &doomed).await.unwrap();
    // A NotReady node whose VM still exists stays.
    gce.add_instance("sick", ZONE);
    let mut sick = node("sick", ZONE, None);
    sick.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
    nodes.create(&PostParams::default(), &sick).await.unwrap();
    let _ctl = Controller::start(&api_server, &gce, &["--controllers", "node"]);

    let n = eventually("fresh initialized", WAIT, || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get("fresh").await.ok()?;
            let tainted = n
                .spec
                .as_ref()?
                .taints
                .as_ref()?
                .iter()
                .any(|t| t.key.contains("uninitialized"));
            (!tainted).then_some(n)
        }
    })
    .await;
    let spec = n.spec.clone().unwrap();
    assert_eq!(
        spec.provider_id.as_deref(),
        Some(format!("gce://{PROJECT}/{ZONE_C}/fresh").as_str())
    );
    let mut left: Vec<String> = spec.taints.unwrap().into_iter().map(|t| t.key).collect();
    left.sort();
    assert_eq!(left, kept);
    let labels = n.metadata.labels.clone().unwrap();
    assert_eq!(labels["topology.kubernetes.io/zone"], ZONE_C);
    assert_eq!(labels["topology.kubernetes.io/region"], REGION);
    assert_eq!(labels["node.kubernetes.io/instance-type"], "e2-standard-4");
    let addrs: Vec<(String, String)> = n
        .status
        .unwrap()
        .addresses
        .unwrap()
        .into_iter()
        .map(|a| (a.type_, a.address))
        .collect();
    assert!(addrs.contains(&("InternalIP".into(), internal)), "{addrs:?}");
    assert!(
        addrs.contains(&("ExternalIP".into(), "198.51.100.7".into())),
        "{addrs:?}"
    );
    assert!(addrs.contains(&("Hostname".into(), "fresh".into())), "{addrs:?}");

    gce.admin("DELETE", &format!("instances/{ZONE}/doomed"), None);
    eventually("doomed node deleted", WAIT, || {
        let nodes = nodes.clone();
        async move { nodes.get_opt("doomed").await.ok()?.is_none().then_some(()) }
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert!(
        nodes.get_opt("sick").await.unwrap().is_some(),
        "NotReady node with an instance stays"
    );
}
