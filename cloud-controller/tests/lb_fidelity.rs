//! Fidelity to cloud-provider-gcp (providers/gce) end to end: upstream's `l4-netlb-v1` finalizer
//! is added, removed, and adopted from Services the upstream controller left behind; Services of
//! the backend-service controllers are never touched; the static address is held only while the
//! forwarding rule is built (a quota of 2 serves 5 LBs), and a controller killed inside that
//! window loses no IP and leaks no address.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

const NETLB: &str = "gke.networking.io/l4-netlb-v1";
const CLEANUP: &str = "service.kubernetes.io/load-balancer-cleanup";

fn finalizers(svc: &Service) -> Vec<String> {
    svc.metadata.finalizers.clone().unwrap_or_default()
}

async fn wait_gone(services: &Api<Service>, name: &str) {
    eventually(&format!("Service {name} gone"), WAIT, || {
        let services = services.clone();
        let name = name.to_owned();
        async move {
            match services.get_opt(&name).await {
                Ok(None) => Some(()),
                _ => None,
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_netlb_finalizer_is_adopted_and_released() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");

    // What the upstream controller leaves: a Service deleted while it carried only the netlb
    // finalizer (Terminating), and a live one carrying only that finalizer.
    let mut left = lb_service("left", &[80]);
    left.metadata.finalizers = Some(vec![NETLB.into()]);
    services.create(&PostParams::default(), &left).await.unwrap();
    services.delete("left", &DeleteParams::default()).await.unwrap();
    let terminating = services.get("left").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    let mut adopted = lb_service("adopted", &[80]);
    adopted.metadata.finalizers = Some(vec![NETLB.into()]);
    services.create(&PostParams::default(), &adopted).await.unwrap();

    let _ctl = Controller::start(&api_server, &gce, &["--controllers", "service"]);
    wait_gone(&services, "left").await;
    let (svc, _ip) = wait_ingress(&client, "adopted").await;
    let lb = lb_name(&svc);
    let mut have = finalizers(&svc);
    have.sort();
    assert_eq!(have, [NETLB, CLEANUP], "both finalizers, as upstream");
    assert!(gce.find("targetPools", &lb).is_some());

    // A new Service gets both finalizers too.
    services
        .create(&PostParams::default(), &lb_service("fresh", &[81]))
        .await
        .unwrap();
    let (fresh, _) = wait_ingress(&client, "fresh").await;
    let mut have = finalizers(&fresh);
    have.sort();
    assert_eq!(have, [NETLB, CLEANUP]);

    // Deleting removes the objects and both finalizers: the Service goes away.
    services
        .delete("adopted", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&services, "adopted").await;
    for kind in ["forwardingRules", "targetPools", "addresses"] {
        assert!(gce.find(kind, &lb).is_none(), "{kind}/{lb} left behind");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_service_load_balancers_are_left_alone() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");

    let mut rbs = lb_service("rbs", &[80]);
    rbs.metadata.annotations = Some([("cloud.google.com/l4-rbs".to_owned(), "enabled".to_owned())].into());
    let mut v2 = lb_service("v2", &[80]);
    v2.metadata.finalizers = Some(vec!["gke.networking.io/l4-netlb-v2".into()]);
    let mut classed = lb_service("classed", &[80]);
    classed.spec.as_mut().unwrap().load_balancer_class = Some("example.com/other".into());
    let plain = lb_service("bs", &[80]);
    let mut foreign_lbs = Vec::new();
    for svc in [rbs, v2, classed, plain] {
        let created = services.create(&PostParams::default(), &svc).await.unwrap();
        foreign_lbs.push((created.metadata.name.clone().unwrap(), lb_name(&created)));
    }
    // "bs" looks like ours, but a forwarding rule of its name points at a backend service.
    let bs_lb = foreign_lbs[3].1.clone();
    // The backend service must exist, as in GCE, with the one regional check GCE requires of it.
    let (status, body) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/regions/{REGION}/healthChecks"),
        Some(&json!({"name": "k8s2-x-hc", "type": "HTTP", "httpHealthCheck": {"port": 10256}})),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/regions/{REGION}/backendServices"),
        Some(
            &json!({"name": "k8s2-x", "loadBalancingScheme": "EXTERNAL", "protocol": "TCP",
            "healthChecks": [format!("projects/{PROJECT}/regions/{REGION}/healthChecks/k8s2-x-hc")]}),
        ),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/regions/{REGION}/forwardingRules"),
        Some(&json!({
            "name": bs_lb,
            "IPProtocol": "TCP",
            "portRange": "80-80",
            "backendService": format!("projects/{PROJECT}/regions/{REGION}/backendServices/k8s2-x"),
        })),
    );
    assert_eq!(status, 200, "{body}");

    let _ctl = Controller::start(&api_server, &gce, &["--controllers", "service"]);
    services
        .create(&PostParams::default(), &lb_service("ours", &[80]))
        .await
        .unwrap();
    wait_ingress(&client, "ours").await;
    // Every foreign Service was seen before "ours" got its IP; give stragglers a moment.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mutating = gce.mutating_calls();
    for (name, lb) in &foreign_lbs {
        assert!(
            !mutating.iter().any(|c| c.contains(lb.as_str())),
            "{name}: GCE mutated: {mutating:?}"
        );
        let svc = services.get(name).await.unwrap();
        let ours: Vec<String> = finalizers(&svc)
            .into_iter()
            .filter(|f| f == NETLB || f == CLEANUP)
            .collect();
        assert!(ours.is_empty(), "{name} got {ours:?}");
        assert!(
            gce.find("targetPools", lb).is_none(),
            "{name}: a target pool was built"
        );
    }
    // Deleting it deletes nothing of the other controller's.
    services.delete("bs", &DeleteParams::default()).await.unwrap();
    wait_gone(&services, "bs").await;
    assert!(gce.find("forwardingRules", &bs_lb).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_static_addresses_serve_five_load_balancers() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&["--op-latency-ms", "100"]);
    gce.admin("POST", "quotas", Some(&json!({"STATIC_ADDRESSES": 2})));
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    let _ctl = Controller::start(&api_server, &gce, &["--controllers", "service"]);
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    for i in 0..5 {
        services
            .create(&PostParams::default(), &lb_service(&format!("q{i}"), &[80]))
            .await
            .unwrap();
    }
    let mut ips = Vec::new();
    for i in 0..5 {
        let (svc, ip) = wait_ingress(&client, &format!("q{i}")).await;
        let fr = gce.find("forwardingRules", &lb_name(&svc)).unwrap();
        assert_eq!(
            fr["IPAddress"],
            ip.as_str(),
            "the forwarding rule holds the ingress IP"
        );
        ips.push(ip);
    }
    ips.sort();
    ips.dedup();
    assert_eq!(ips.len(), 5, "distinct IPs: {ips:?}");
    eventually("every reservation released", WAIT, || async {
        gce.names("addresses").is_empty().then_some(())
    })
    .await;
}

/// Polls the fake until `cond` holds on (address present, forwarding rule present) of `lb`.
async fn wait_lb_state(gce: &FakeGce, lb: &str, address: bool, rule: bool) {
    eventually(
        &format!("{lb}: address {address}, forwarding rule {rule}"),
        WAIT,
        || async {
            let st = gce.state();
            let has = |kind: &str| st[kind].as_array().into_iter().flatten().any(|r| r["name"] == lb);
            (has("addresses") == address && has("forwardingRules") == rule).then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_between_reservation_and_forwarding_rule_loses_no_ip() {
    let api_server = ApiServer::start();
    // Slow operations widen the windows the controller is killed in.
    let gce = FakeGce::start(&["--op-latency-ms", "700"]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    let mut ctl = Controller::start(&api_server, &gce, &["--controllers", "service"]);
    let services: Api<Service> = Api::namespaced(client.clone(), "default");

    // 1. Killed after the address was reserved, before the forwarding rule exists.
    let svc = services
        .create(&PostParams::default(), &lb_service("k1", &[80]))
        .await
        .unwrap();
    let lb = lb_name(&svc);
    wait_lb_state(&gce, &lb, true, false).await;
    ctl.kill();
    let reserved = gce.find("addresses", &lb).unwrap()["address"]
        .as_str()
        .unwrap()
        .to_owned();
    ctl.spawn();
    let (_, ip) = wait_ingress(&client, "k1").await;
    assert_eq!(ip, reserved, "the reserved IP is the LB's IP");
    wait_lb_state(&gce, &lb, false, true).await;
    assert_eq!(
        gce.find("forwardingRules", &lb).unwrap()["IPAddress"],
        ip.as_str()
    );

    // 2. Killed after the forwarding rule was created, before the reservation was released.
    let svc = services
        .create(&PostParams::default(), &lb_service("k2", &[80]))
        .await
        .unwrap();
    let lb = lb_name(&svc);
    wait_lb_state(&gce, &lb, true, true).await;
    ctl.kill();
    let held = gce.find("forwardingRules", &lb).unwrap()["IPAddress"]
        .as_str()
        .unwrap()
        .to_owned();
    ctl.spawn();
    let (_, ip) = wait_ingress(&client, "k2").await;
    assert_eq!(ip, held);
    wait_lb_state(&gce, &lb, false, true).await;
    assert_eq!(
        gce.find("forwardingRules", &lb).unwrap()["IPAddress"],
        ip.as_str()
    );
    assert!(
        gce.names("addresses").is_empty(),
        "leaked: {:?}",
        gce.names("addresses")
    );
}
