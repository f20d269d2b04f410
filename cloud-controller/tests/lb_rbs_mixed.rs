//! Issue 34 on RBS NetLBs end to end (real controller with `--rbs-netlb`, real API server, the
//! fake GCE, objects read back with the real gcloud when installed): a TCP+UDP Service gets one
//! L3_DEFAULT all-ports rule over an UNSPECIFIED backend service and a per-protocol firewall; with
//! `networking.gke.io/weighted-load-balancing: pods-per-node` and ETP Local its backend service is
//! WEIGHTED_MAGLEV, and MAGLEV once the annotation goes; deleted, nothing is left. The same
//! mixed Service without the RBS annotation (a target pool) gets no GCE object.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;

use common::gcloud::Describe;
use common::l4::*;
use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WEIGHTED: &str = "networking.gke.io/weighted-load-balancing";
const L3_KEY: &str = "service.kubernetes.io/l3-forwarding-rule";

fn mixed_service(name: &str, annotations: Value) -> Service {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "selector": {"app": name},
            "ports": [
                {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080},
                {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8443},
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 5353}]}
    }))
    .unwrap()
}

fn annotation(svc: &Service, key: &str) -> Option<String> {
    svc.metadata.annotations.as_ref()?.get(key).cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_weighted_rbs_netlb_and_a_mixed_target_pool_service() {
    let rig = Rig::start(&[ZONE], &["--rbs-netlb"]).await;
    let (gce, services) = (&rig.gce, &rig.services);
    services
        .create(
            &PostParams::default(),
            &mixed_service("web", json!({RBS: "enabled", WEIGHTED: "pods-per-node"})),
        )
        .await
        .unwrap();
    // Without the RBS annotation: a target pool, which refuses mixed protocols before any call.
    services
        .create(&PostParams::default(), &mixed_service("tp", json!({})))
        .await
        .unwrap();

    let svc = eventually("web's L3 NetLB", WAIT, || {
        let services = services.clone();
        async move {
            let s = services.get("web").await.ok()?;
            (ingress_ip(&s).is_some() && annotation(&s, L3_KEY).is_some()).then_some(s)
        }
    })
    .await;
    let lb = lb_name(&svc);
    let ip = ingress_ip(&svc).unwrap();
    assert_eq!(annotation(&svc, L3_KEY).as_deref(), Some(lb.as_str()));
    for key in ["tcp-forwarding-rule", "udp-forwarding-rule"] {
        assert_eq!(annotation(&svc, &format!("service.kubernetes.io/{key}")), None);
    }
    let backend = annotation(&svc, "service.kubernetes.io/backend-service").unwrap();
    let read = Describe::gcloud_or_rest(gce, "the gcloud read-back of the L3 NetLB");
    let fr = read.regional("forwarding-rules", "forwardingRules", &lb);
    let fw = read.global("firewall-rules", "firewalls", &backend);
    assert_eq!(fr["IPProtocol"], "L3_DEFAULT", "{fr}");
    assert_eq!(fr["allPorts"], true, "{fr}");
    assert!(fr["portRange"].is_null(), "{fr}");
    assert_eq!(fr["IPAddress"], ip);
    let allowed: BTreeMap<String, Value> = fw["allowed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["IPProtocol"].as_str().unwrap().to_lowercase(),
                a["ports"].clone(),
            )
        })
        .collect();
    assert_eq!(
        allowed,
        BTreeMap::from([
            ("tcp".to_owned(), json!(["80", "443"])),
            ("udp".to_owned(), json!(["53"]))
        ])
    );
    let bs = read.regional("backend-services", "backendServices", &backend);
    assert_eq!(bs["protocol"], "UNSPECIFIED", "{bs}");
    assert_eq!(bs["localityLbPolicy"], "WEIGHTED_MAGLEV", "{bs}");

    // Weighting off: MAGLEV (not left at WEIGHTED_MAGLEV).
    let off = json!({"metadata": {"annotations": {WEIGHTED: null}}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&off))
        .await
        .unwrap();
    eventually("web's backend service on MAGLEV", WAIT, || {
        let policy = gce
            .find("backendServices", &backend)
            .map(|b| b["localityLbPolicy"].clone());
        async move { (policy == Some(json!("MAGLEV"))).then_some(()) }
    })
    .await;

    let tp = services.get("tp").await.unwrap();
    assert!(ingress_ip(&tp).is_none(), "a mixed target-pool Service got an IP");
    assert!(
        gce.names("targetPools").is_empty(),
        "{:?}",
        gce.names("targetPools")
    );

    delete_and_wait(services, &["web", "tp"]).await;
    assert_eq!(everything(gce), Vec::<String>::new());
}
