//! Service options end to end: an invalid Service (a network tier upstream does not know) is a
//! Warning event and never a GCE call, and an invalid source range never reaches the controller;
//! source ranges, ClientIP affinity and the Standard network tier reach the GCE objects; a
//! user-reserved static IP (spec.loadBalancerIP) is used and survives the Service.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use svcnet_crds::CloudLoadBalancer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_ranges_options_and_user_owned_ip() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    let _ctl = Controller::start(&api_server, &gce, &["--controllers", "service"]);
    cluster_id(&client).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");

    // 1. An invalid Service: Warning event, record with the error, no GCE call. The API server
    // itself rejects a bad CIDR (in spec.loadBalancerSourceRanges and, without it, in the
    // annotation), so the controller's own range check is defence only; the network tier is
    // not validated by the server (upstream's controller compares it case-sensitively).
    tokio::time::sleep(Duration::from_millis(300)).await;
    gce.clear_calls();
    let mut bad_cidr = lb_service("bad-cidr", &[80]);
    bad_cidr.metadata.annotations = Some(
        [(
            "service.beta.kubernetes.io/load-balancer-source-ranges".to_owned(),
            "10.0.0.0/33".to_owned(),
        )]
        .into(),
    );
    match services.create(&PostParams::default(), &bad_cidr).await {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 422, "{e:?}"),
        other => panic!("the API server accepted a bad source range: {other:?}"),
    }
    let mut bad = lb_service("bad", &[80]);
    bad.metadata.annotations =
        Some([("cloud.google.com/network-tier".to_owned(), "premium".to_owned())].into());
    services.create(&PostParams::default(), &bad).await.unwrap();
    eventually("SyncLoadBalancerFailed event", WAIT, || {
        let client = client.clone();
        async move {
            event_reasons(&client, "bad")
                .await
                .contains(&"SyncLoadBalancerFailed".to_owned())
                .then_some(())
        }
    })
    .await;
    let clbs: Api<CloudLoadBalancer> = Api::namespaced(client.clone(), "default");
    let err = eventually("record carries the error", WAIT, || {
        let clbs = clbs.clone();
        async move { clbs.get_opt("bad").await.ok()??.status?.last_error }
    })
    .await;
    assert!(err.contains("premium"), "{err}");
    assert_eq!(
        gce.calls(),
        (0, 0),
        "an invalid Service caused GCE calls: {:?}",
        gce.mutating_calls()
    );

    // 2. Source ranges, ClientIP affinity, Standard tier.
    let mut opts = lb_service("opts", &[443]);
    opts.metadata.annotations =
        Some([("cloud.google.com/network-tier".to_owned(), "Standard".to_owned())].into());
    let spec = opts.spec.as_mut().unwrap();
    spec.load_balancer_source_ranges = Some(vec!["192.0.2.0/24".into(), "198.51.100.7/32".into()]);
    spec.session_affinity = Some("ClientIP".into());
    services.create(&PostParams::default(), &opts).await.unwrap();
    let (svc, ip) = wait_ingress(&client, "opts").await;
    let lb = lb_name(&svc);
    let fw = gce.find("firewalls", &format!("k8s-fw-{lb}")).unwrap();
    let mut ranges: Vec<&str> = fw["sourceRanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    ranges.sort();
    assert_eq!(ranges, ["192.0.2.0/24", "198.51.100.7/32"]);
    assert_eq!(
        gce.find("targetPools", &lb).unwrap()["sessionAffinity"],
        "CLIENT_IP"
    );
    let fr = gce.find("forwardingRules", &lb).unwrap();
    assert_eq!(fr["networkTier"], "STANDARD");
    assert_eq!(fr["IPAddress"], ip.as_str());
    // The IP was reserved in the Standard tier, and released once the forwarding rule held it.
    assert!(gce.find("addresses", &lb).is_none());

    // 2b. The Service turns invalid (unknown tier) and is then deleted: the LB still goes away.
    let bad_tier = json!({"metadata": {"annotations": {"cloud.google.com/network-tier": "bogus"}}});
    services
        .patch(
            "opts",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&bad_tier),
        )
        .await
        .unwrap();
    services.delete("opts", &DeleteParams::default()).await.unwrap();
    eventually("invalid Service's LB removed", WAIT, || async {
        let gone = gce.find("forwardingRules", &lb).is_none()
            && gce.find("targetPools", &lb).is_none()
            && gce.find("addresses", &lb).is_none()
            && gce.find("firewalls", &format!("k8s-fw-{lb}")).is_none();
        gone.then_some(())
    })
    .await;

    // 3. A user's reserved address named differently: used, never released.
    let (s, op) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/regions/{REGION}/addresses"),
        Some(&json!({"name": "my-static-ip"})),
    );
    assert_eq!(s, 200, "{op}");
    let user_ip = eventually("reserved address", WAIT, || async {
        gce.find("addresses", "my-static-ip")?["address"]
            .as_str()
            .map(str::to_owned)
    })
    .await;
    let mut owned = lb_service("owned", &[8080]);
    owned.spec.as_mut().unwrap().load_balancer_ip = Some(user_ip.clone());
    services.create(&PostParams::default(), &owned).await.unwrap();
    let (svc, ip) = wait_ingress(&client, "owned").await;
    assert_eq!(ip, user_ip);
    let lb = lb_name(&svc);
    assert_eq!(
        gce.find("forwardingRules", &lb).unwrap()["IPAddress"],
        user_ip.as_str()
    );
    assert!(
        gce.find("addresses", &lb).is_none(),
        "no controller address for a user-owned IP"
    );
    services.delete("owned", &DeleteParams::default()).await.unwrap();
    eventually("owned LB gone", WAIT, || async {
        gce.find("forwardingRules", &lb).is_none().then_some(())
    })
    .await;
    eventually("Service gone", WAIT, || {
        let services = services.clone();
        async move { services.get_opt("owned").await.ok()?.is_none().then_some(()) }
    })
    .await;
    assert_eq!(
        gce.find("addresses", "my-static-ip").unwrap()["address"],
        user_ip.as_str(),
        "the user's address stays reserved"
    );
}
