//! A dual-stack RBS NetLB's IPv6 half (ingress-gce's `a<uid>-ipv6` rule on an EXTERNAL IPv6
//! subnetwork, and the `-ipv6` nodes firewall) is removed with the Service: the controller reads
//! both, deletes the rule before the backend service it holds, and leaves nothing. The IPv6 half
//! is inserted into the fake GCE as ingress-gce would leave it (svcnet does not build it yet);
//! the real gcloud reads it back before the delete when installed.

#![allow(clippy::unwrap_used)]

mod common;

use common::gcloud::{Gcloud, have_gcloud};
use common::l4::*;
use common::*;
use kube::api::PostParams;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_stack_rbs_netlb_teardown_removes_the_ipv6_rule_and_firewall() {
    let rig = Rig::start(&[ZONE], &["--rbs-netlb"]).await;
    let (gce, services) = (&rig.gce, &rig.services);
    let (s, body) = gce.call(
        "POST",
        &format!("/compute/v1/projects/{PROJECT}/regions/{REGION}/subnetworks"),
        Some(&json!({
            "name": "v6-subnet", "network": "default", "ipCidrRange": "10.60.0.0/24",
            "stackType": "IPV4_IPV6", "ipv6AccessType": "EXTERNAL"
        })),
    );
    assert_eq!(s, 200, "{body}");

    services
        .create(&PostParams::default(), &rbs_service("web", &[80]))
        .await
        .unwrap();
    let gce_ref = gce;
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
        let g = Gcloud::new(gce);
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

    delete_and_wait(services, &["web"]).await;
    assert_eq!(everything(gce), Vec::<String>::new());
    if have_gcloud("the gcloud check that nothing is left") {
        let g = Gcloud::new(gce);
        assert_eq!(g.value(&["compute", "forwarding-rules", "list"]), json!([]));
        assert_eq!(g.value(&["compute", "firewall-rules", "list"]), json!([]));
    }
}
