//! A LoadBalancer Service end to end against the real control plane and svcnet-fake-gce:
//! creation (objects, ingress IP, finalizer, events, record, call budget), a no-op resync that
//! makes no mutating call, and deletion (every object gone, finalizer removed).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use svcnet_crds::CloudLoadBalancer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balancer_created_resynced_and_deleted() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    add_node(&client, &gce, "node-2", ZONE_C, None).await;
    let ctl = Controller::start(&api_server, &gce, &[]);
    let cid = cluster_id(&client).await;

    gce.clear_calls();
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(&PostParams::default(), &lb_service("web", &[80, 443]))
        .await
        .unwrap();
    let (svc, ip) = wait_ingress(&client, "web").await;
    let lb = lb_name(&svc);

    // The objects of the seed article's picture.
    // The reservation held the IP while the forwarding rule was built and is released now that
    // the rule holds it (upstream ensureExternalLoadBalancer's isSafeToReleaseIP).
    assert!(gce.find("addresses", &lb).is_none(), "reservation not released");
    let created_address = gce
        .mutating_calls()
        .iter()
        .any(|c| c.starts_with("POST") && c.ends_with("/addresses"));
    assert!(
        created_address,
        "the IP was reserved first: {:?}",
        gce.mutating_calls()
    );
    let fw = gce
        .find("firewalls", &format!("k8s-fw-{lb}"))
        .expect("traffic firewall");
    assert_eq!(fw["sourceRanges"], json!(["0.0.0.0/0"]));
    assert_eq!(fw["targetTags"], json!([NODE_TAG]));
    assert_eq!(fw["allowed"][0]["IPProtocol"], "tcp");
    let mut ports: Vec<String> = fw["allowed"][0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    ports.sort();
    assert_eq!(ports, ["443", "80"]);
    let hc_name = format!("k8s-{cid}-node");
    let hc = gce.find("httpHealthChecks", &hc_name).expect("node health check");
    assert_eq!(
        (hc["port"].as_i64(), hc["requestPath"].as_str()),
        (Some(10256), Some("/healthz"))
    );
    let hc_fw = gce
        .find("firewalls", &format!("{hc_name}-http-hc"))
        .expect("health check firewall");
    assert_eq!(hc_fw["allowed"][0]["ports"], json!(["10256"]));
    assert!(
        hc_fw["sourceRanges"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "130.211.0.0/22")
    );
    let pool = gce.find("targetPools", &lb).expect("target pool");
    let mut members: Vec<&str> = pool["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    members.sort();
    assert_eq!(members, ["node-1", "node-2"]);
    assert!(
        pool["healthChecks"][0]
            .as_str()
            .unwrap()
            .ends_with(&format!("/httpHealthChecks/{hc_name}"))
    );
    let fr = gce.find("forwardingRules", &lb).expect("forwarding rule");
    assert_eq!(fr["IPAddress"], ip.as_str());
    assert_eq!(fr["portRange"], "80-443");
    assert_eq!(fr["IPProtocol"], "TCP");
    assert!(
        fr["target"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/regions/{REGION}/targetPools/{lb}"))
    );

    // Finalizer, events.
    assert!(
        svc.metadata
            .finalizers
            .clone()
            .unwrap_or_default()
            .contains(&"service.kubernetes.io/load-balancer-cleanup".to_owned())
    );
    let reasons = eventually("Ensuring and Ensured events", WAIT, || {
        let client = client.clone();
        async move {
            let r = event_reasons(&client, "web").await;
            (r.contains(&"EnsuringLoadBalancer".to_owned()) && r.contains(&"EnsuredLoadBalancer".to_owned()))
                .then_some(r)
        }
    })
    .await;
    assert!(
        !reasons.contains(&"SyncLoadBalancerFailed".to_owned()),
        "{reasons:?}"
    );

    // Call budget for a new LB: address, 2 firewalls, health check, pool, forwarding rule, release.
    let (_, mutating) = gce.calls();
    assert!(
        mutating <= 8,
        "a new LB took {mutating} mutating calls: {:?}",
        gce.mutating_calls()
    );
    assert!(
        mutating >= 7,
        "every object was created by a call: {:?}",
        gce.mutating_calls()
    );

    // Metrics count the same calls.
    let text = ctl.metrics();
    assert!(text.contains("svcnet_cloud_controller_leader 1"), "{text}");
    assert!(
        text.contains(
            r#"svcnet_cloud_controller_gce_calls_total{call="create_forwarding_rule",result="ok"} 1"#
        ),
        "{text}"
    );

    // The CloudLoadBalancer record.
    let clbs: Api<CloudLoadBalancer> = Api::namespaced(client.clone(), "default");
    let st = eventually("CloudLoadBalancer status", WAIT, || {
        let clbs = clbs.clone();
        async move {
            clbs.get_opt("web")
                .await
                .ok()
                .flatten()
                .and_then(|c| c.status)
                .filter(|s| s.is_ready())
        }
    })
    .await;
    assert_eq!(st.ingress_ip.as_deref(), Some(ip.as_str()));
    let g = st.gce.clone().unwrap();
    assert_eq!(
        g.forwarding_rule.as_ref().map(|f| f.name.as_str()),
        Some(lb.as_str())
    );
    assert!(
        g.forwarding_rule
            .unwrap()
            .self_link
            .unwrap()
            .contains(&format!("/forwardingRules/{lb}"))
    );
    assert_eq!(g.target_pool.unwrap().instances, ["node-1", "node-2"]);
    assert_eq!(st.node_count, Some(2));
    assert_eq!(st.ports_summary.as_deref(), Some("80/TCP,443/TCP"));

    // The controller's own writes (ingress status, finalizer, record) do not start another sync:
    // no GCE call for this LB at all (the route controller lists routes on its own period).
    gce.clear_calls();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let log = gce.admin("GET", "calls", None);
    let lb_calls: Vec<&str> = log["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["path"].as_str())
        .filter(|p| !p.contains("/routes"))
        .collect();
    assert!(
        lb_calls.is_empty(),
        "a sync after our own status write: {lb_calls:?}"
    );

    // A no-op resync (Service touched without LB-relevant change): reads only.
    gce.clear_calls();
    let touch = json!({"metadata": {"annotations": {"touched": "yes"}}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&touch))
        .await
        .unwrap();
    eventually("the resync read GCE", WAIT, || async {
        (gce.calls().0 >= 8).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (total, mutating) = gce.calls();
    assert_eq!(mutating, 0, "no-op resync mutated: {:?}", gce.mutating_calls());
    assert!(total > 0);

    // Delete: everything goes, then the finalizer, then the Service.
    services.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Service gone", WAIT, || {
        let services = services.clone();
        async move { services.get_opt("web").await.unwrap().is_none().then_some(()) }
    })
    .await;
    assert_eq!(lb_objects(&gce, &lb), Vec::<String>::new(), "objects left behind");
    let reasons = event_reasons(&client, "web").await;
    assert!(
        reasons.contains(&"DeletingLoadBalancer".to_owned()),
        "{reasons:?}"
    );
    assert!(reasons.contains(&"DeletedLoadBalancer".to_owned()), "{reasons:?}");
    assert!(clbs.get_opt("web").await.unwrap().is_none(), "record deleted");
}
