//! A dual-stack RBS NetLB's IPv6 half (ingress-gce's `a<uid>-ipv6` rule on an EXTERNAL IPv6
//! subnetwork, and the `-ipv6` nodes firewall) is removed with the Service: the controller reads
//! both, deletes the rule before the backend service it holds, and leaves nothing. The IPv6 half
//! is inserted into the fake GCE as ingress-gce would leave it (svcnet does not build it yet);
//! the real gcloud reads it back before the delete when installed.

#![allow(clippy::unwrap_used)]

mod common;

use common::gcloud::{Gcloud, have_gcloud};
use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

const RBS: &str = "cloud.google.com/l4-rbs";
const COLLECTIONS: [&str; 6] = [
    "addresses",
    "firewalls",
    "regionHealthChecks",
    "forwardingRules",
    "backendServices",
    "instanceGroups",
];

fn everything(gce: &FakeGce) -> Vec<String> {
    COLLECTIONS
        .iter()
        .flat_map(|k| gce.names(k).into_iter().map(move |n| format!("{k}/{n}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_stack_rbs_netlb_teardown_removes_the_ipv6_rule_and_firewall() {
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    let _ctl = Controller::start(&api_server, &gce, &["--rbs-netlb"]);
    let (s, body) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/regions/{REGION}/subnetworks"),
        Some(&json!({
            "name": "v6-subnet", "network": "default", "ipCidrRange": "10.60.0.0/24",
            "stackType": "IPV4_IPV6", "ipv6AccessType": "EXTERNAL"
        })),
    );
    assert_eq!(s, 200, "{body}");

    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let mut svc = lb_service("web", &[80]);
    svc.metadata.annotations = Some([(RBS.to_owned(), "enabled".to_owned())].into());
    services.create(&PostParams::default(), &svc).await.unwrap();
    let gce_ref = &gce;
    let svc = eventually("an RBS NetLB for web", WAIT, || {
        let services = services.clone();
        async move {
            let gce = gce_ref;
            let s = services.get("web").await.ok()?;
            let rule = gce.find("forwardingRules", &lb_name(&s))?;
            (rule["backendService"].is_string() && ingress_ip(&s).is_some()).then_some((s, rule))
        }
    })
    .await;
    let (svc, v4_rule) = svc;
    let lb = lb_name(&svc);
    let backend = svc.metadata.annotations.as_ref().unwrap()["service.kubernetes.io/backend-service"].clone();

    // The IPv6 half, named and shaped as ingress-gce's l4netlbipv6.go makes it.
    let v6_rule = format!("{lb}-ipv6");
    let v6_fw = format!("{backend}-ipv6");
    let (s, body) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/regions/{REGION}/forwardingRules"),
        Some(&json!({
            "name": v6_rule, "IPProtocol": "TCP", "portRange": "80-80",
            "loadBalancingScheme": "EXTERNAL", "networkTier": "PREMIUM",
            "backendService": v4_rule["backendService"], "ipVersion": "IPV6",
            "subnetwork": "v6-subnet"
        })),
    );
    assert_eq!(s, 200, "{body}");
    let v6_ip = gce.find("forwardingRules", &v6_rule).unwrap()["IPAddress"]
        .as_str()
        .unwrap()
        .to_owned();
    let bare = v6_ip.trim_end_matches("/96").to_owned();
    let (s, body) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/global/firewalls"),
        Some(&json!({
            "name": v6_fw, "network": "default", "sourceRanges": ["0::0/0"],
            "destinationRanges": [bare], "allowed": [{"IPProtocol": "tcp", "ports": ["80"]}]
        })),
    );
    assert_eq!(s, 200, "{body}");

    if have_gcloud("the gcloud read-back of the IPv6 rule and firewall") {
        let g = Gcloud::new(&gce);
        let fr = g.value(&[
            "compute",
            "forwarding-rules",
            "describe",
            &v6_rule,
            "--region",
            REGION,
        ]);
        assert_eq!(fr["ipVersion"], "IPV6");
        assert!(fr["IPAddress"].as_str().unwrap().ends_with("/96"), "{fr}");
        assert!(fr["subnetwork"].as_str().unwrap().ends_with("/v6-subnet"), "{fr}");
        assert_eq!(fr["backendService"], v4_rule["backendService"]);
        let fw = g.value(&["compute", "firewall-rules", "describe", &v6_fw]);
        assert_eq!(fw["destinationRanges"], json!([bare]));
    }

    services.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("web deleted", WAIT, || {
        let services = services.clone();
        async move {
            services
                .get_opt("web")
                .await
                .ok()
                .flatten()
                .is_none()
                .then_some(())
        }
    })
    .await;
    assert_eq!(everything(&gce), Vec::<String>::new());
    if have_gcloud("the gcloud check that nothing is left") {
        let g = Gcloud::new(&gce);
        assert_eq!(g.value(&["compute", "forwarding-rules", "list"]), json!([]));
        assert_eq!(g.value(&["compute", "firewall-rules", "list"]), json!([]));
    }
}
