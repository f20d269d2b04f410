//! Changes to a live load balancer: nodes joining and leaving the pool (addInstance /
//! removeInstance only), a port change (firewall patched, forwarding rule recreated on the same
//! IP), and externalTrafficPolicy switches (health check swapped both ways).
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn pool_members(gce: &FakeGce, lb: &str) -> Vec<String> {
    let Some(pool) = gce.find("targetPools", lb) else {
        return Vec::new();
    };
    let mut m: Vec<String> = pool["instances"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| i.as_str().unwrap().rsplit('/').next().unwrap().to_owned())
        .collect();
    m.sort();
    m
}

fn link_name(v: &Value) -> String {
    v.as_str()
        .unwrap_or("")
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_follows_nodes_ports_and_traffic_policy() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    add_node(&client, &gce, "node-2", ZONE, None).await;
    let _ctl = Controller::start(&api_server, &gce, &[]);
    let cid = cluster_id(&client).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(&PostParams::default(), &lb_service("web", &[80]))
        .await
        .unwrap();
    let (svc, ip) = wait_ingress(&client, "web").await;
    let lb = lb_name(&svc);
    eventually("pool with two nodes", WAIT, || async {
        (pool_members(&gce, &lb) == ["node-1", "node-2"]).then_some(())
    })
    .await;

    // A node joins: one addInstance, nothing else mutates.
    gce.clear_calls();
    add_node(&client, &gce, "node-3", ZONE_C, None).await;
    eventually("node-3 in the pool", WAIT, || async {
        (pool_members(&gce, &lb) == ["node-1", "node-2", "node-3"]).then_some(())
    })
    .await;
    let muts = gce.mutating_calls();
    assert!(
        !muts.is_empty() && muts.iter().all(|c| c.ends_with("/addInstance")),
        "{muts:?}"
    );
    eventually("UpdatedLoadBalancer event", WAIT, || {
        let client = client.clone();
        async move {
            event_reasons(&client, "web")
                .await
                .contains(&"UpdatedLoadBalancer".to_owned())
                .then_some(())
        }
    })
    .await;

    // A node leaves (Node deleted) and another is excluded by label.
    gce.clear_calls();
    let nodes: Api<Node> = Api::all(client.clone());
    nodes.delete("node-2", &DeleteParams::default()).await.unwrap();
    let exclude =
        json!({"metadata": {"labels": {"node.kubernetes.io/exclude-from-external-load-balancers": "true"}}});
    nodes
        .patch("node-3", &PatchParams::default(), &Patch::Merge(&exclude))
        .await
        .unwrap();
    eventually("node-2 and node-3 out of the pool", WAIT, || async {
        (pool_members(&gce, &lb) == ["node-1"]).then_some(())
    })
    .await;
    let muts = gce.mutating_calls();
    assert!(muts.iter().all(|c| c.ends_with("/removeInstance")), "{muts:?}");

    // Port change: firewall patched in place, forwarding rule recreated on the same IP.
    gce.clear_calls();
    let ports = json!({"spec": {"ports": [
        {"name": "p80", "port": 80, "protocol": "TCP", "targetPort": 80},
        {"name": "p8080", "port": 8080, "protocol": "TCP", "targetPort": 8080}
    ]}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&ports))
        .await
        .unwrap();
    eventually("forwarding rule on 80-8080", WAIT, || async {
        let fr = gce.find("forwardingRules", &lb)?;
        (fr["portRange"] == "80-8080").then_some(())
    })
    .await;
    let fw = gce.find("firewalls", &format!("k8s-fw-{lb}")).unwrap();
    let mut ports: Vec<&str> = fw["allowed"][0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    ports.sort();
    assert_eq!(ports, ["80", "8080"]);
    let fr = gce.find("forwardingRules", &lb).unwrap();
    assert_eq!(fr["IPAddress"], ip.as_str(), "the IP survived the recreation");
    eventually("reservation released after the recreation", WAIT, || async {
        gce.find("addresses", &lb).is_none().then_some(())
    })
    .await;
    let muts = gce.mutating_calls();
    // Promoted to a reservation before the forwarding rule was deleted, released after.
    let addr_calls: Vec<&String> = muts.iter().filter(|c| c.contains("/addresses")).collect();
    assert!(
        addr_calls.len() == 2 && addr_calls[0].starts_with("POST") && addr_calls[1].starts_with("DELETE"),
        "{muts:?}"
    );
    assert!(
        muts.iter()
            .any(|c| c.starts_with("PATCH") && c.contains("/firewalls/")),
        "{muts:?}"
    );
    assert!(
        muts.iter()
            .any(|c| c.starts_with("DELETE") && c.contains("/forwardingRules/")),
        "{muts:?}"
    );
    assert!(
        !muts.iter().any(|c| c.contains("/targetPools")),
        "pool untouched: {muts:?}"
    );
    let (svc, _) = wait_ingress(&client, "web").await;
    assert_eq!(common::ingress_ip(&svc).as_deref(), Some(ip.as_str()));

    // ETP Cluster -> Local: the pool gets the service's own health check on healthCheckNodePort.
    let local = json!({"spec": {"externalTrafficPolicy": "Local"}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&local))
        .await
        .unwrap();
    let svc = services.get("web").await.unwrap();
    let hc_port = svc
        .spec
        .as_ref()
        .unwrap()
        .health_check_node_port
        .expect("healthCheckNodePort allocated");
    eventually("pool uses the local health check", WAIT, || async {
        let pool = gce.find("targetPools", &lb)?;
        (link_name(&pool["healthChecks"][0]) == lb && gce.find("forwardingRules", &lb).is_some())
            .then_some(())
    })
    .await;
    let hc = gce.find("httpHealthChecks", &lb).unwrap();
    assert_eq!(hc["port"].as_i64(), Some(i64::from(hc_port)));
    assert!(gce.find("firewalls", &format!("k8s-{lb}-http-hc")).is_some());
    let node_hc = format!("k8s-{cid}-node");
    eventually("unused node health check deleted", WAIT, || async {
        gce.find("httpHealthChecks", &node_hc).is_none().then_some(())
    })
    .await;
    assert_eq!(pool_members(&gce, &lb), ["node-1"]);

    // And back: the shared node check returns, the local one goes.
    let cluster = json!({"spec": {"externalTrafficPolicy": "Cluster"}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&cluster))
        .await
        .unwrap();
    eventually("pool back on the node health check", WAIT, || async {
        let pool = gce.find("targetPools", &lb)?;
        let done = link_name(&pool["healthChecks"][0]) == node_hc
            && gce.find("httpHealthChecks", &lb).is_none()
            && gce.find("firewalls", &format!("k8s-{lb}-http-hc")).is_none()
            && gce.find("forwardingRules", &lb).is_some();
        done.then_some(())
    })
    .await;
    let fr = gce.find("forwardingRules", &lb).unwrap();
    assert_eq!(fr["IPAddress"], ip.as_str());

    // Type LoadBalancer -> ClusterIP: the LB goes, the finalizer and the ingress status too.
    let to_cluster_ip = json!({"spec": {"type": "ClusterIP", "externalTrafficPolicy": null}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&to_cluster_ip))
        .await
        .unwrap();
    eventually("LB removed after the type change", WAIT, || async {
        (gce.find("forwardingRules", &lb).is_none()
            && gce.find("targetPools", &lb).is_none()
            && gce.find("addresses", &lb).is_none()
            && gce.find("httpHealthChecks", &node_hc).is_none())
        .then_some(())
    })
    .await;
    let svc = eventually("finalizer and ingress gone", WAIT, || {
        let services = services.clone();
        async move {
            let s = services.get("web").await.ok()?;
            let fin = s.metadata.finalizers.clone().unwrap_or_default();
            (fin.is_empty() && common::ingress_ip(&s).is_none()).then_some(s)
        }
    })
    .await;
    assert_eq!(svc.spec.unwrap().type_.as_deref(), Some("ClusterIP"));
}
