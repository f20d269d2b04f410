//! IPv6 and dual-stack internal LBs end to end (real controller, an API server serving
//! dual-stack Services, the fake GCE; every IPv6 object read back with the real gcloud when
//! installed, else from the fake's REST API). Expectations follow ingress-gce's L4 ILB:
//! pkg/loadbalancers/forwarding_rules_ipv6.go `buildExpectedIPv6ForwardingRule` (`-ipv6` name,
//! `ipVersion: IPV6`, INTERNAL, the IPv4 rule's ports and backend service, the subnetwork of
//! `networking.gke.io/internal-load-balancer-subnet`, Premium tier, a description naming the
//! Service only; GCE stores the address as `ADDR/96`), l4.go (an INTERNAL IPv6 reservation held
//! while the rule is made, released after), l4ipv6.go `ensureIPv6NodesFirewall` with
//! utils/sourceranges.go (IPv6 source ranges, else `0::0/0`; the IPv4 entries only in the IPv4
//! firewall), healthchecksl4 (ILB IPv6 probers `2600:2d00:1:b029::/64`), l4ipv6.go's `-ipv6`
//! annotations and `serviceSubnetHasInternalIPv6Range`'s user error.
#![allow(clippy::unwrap_used)]

mod common;

use common::gcloud::{Gcloud, have_gcloud};
use common::ipv6::{FW_V6, HC_FW_V6, Kind, dual_stack_and_ipv6_only, no_ipv6_range};
use common::l4::*;
use common::*;
use k8s_openapi::api::core::v1::Service;
use serde_json::{Value, json};

const SUBNET_ANN: &str = "networking.gke.io/internal-load-balancer-subnet";

const ILB: Kind = Kind {
    asks: ("networking.gke.io/load-balancer-type", "Internal"),
    subnet_annotation: SUBNET_ANN,
    subnet: "v6-internal",
    access: "INTERNAL",
    backend: lb_name,
    v4_firewall: |svc| format!("k8s-fw-{}", lb_name(svc)),
    probers: "2600:2d00:1:b029::/64",
    check_half,
    not_on_ipv6_only: &[],
    no_range_note: &[
        "Service default/nov6: spec.ipFamilies: subnet",
        "does not have internal IPv6 ranges",
        SUBNET_ANN,
    ],
};

/// The ILB's own fields of the IPv6 rule, nodes firewall and check firewall.
fn check_half(svc: &Service, fr: &Value, fw: &Value, hc_fw: &Value) {
    let a = annotations(svc);
    assert!(
        fr["network"].as_str().unwrap().ends_with("/networks/default"),
        "{fr}"
    );
    assert_eq!(fr["loadBalancingScheme"], "INTERNAL", "{fr}");
    assert_eq!(fr["ports"], json!(["80"]), "{fr}");
    // svcnet sends PREMIUM as ingress-gce does; the fake GCE does not echo an internal rule's
    // tier, so absent passes and any other tier fails.
    assert!(fr.get("networkTier").is_none_or(|t| t == "PREMIUM"), "{fr}");
    assert!(fr.get("allowGlobalAccess").is_none_or(|v| v == false), "{fr}");

    assert_eq!(a[FW_V6], format!("k8s-fw-{}-ipv6", lb_name(svc)));
    assert_eq!(
        fw["allowed"],
        json!([{"IPProtocol": "tcp", "ports": ["80"]}]),
        "{fw}"
    );
    let hc_fw_name = &a[HC_FW_V6];
    assert!(
        hc_fw_name.starts_with("k8s-") && hc_fw_name.ends_with("-node-hc-ipv6"),
        "{hc_fw_name} {hc_fw}"
    );
}

/// One control plane for both scenarios, the Warning first (it expects no rule or address at all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipv6_internal_lbs_dual_stack_ipv6_only_and_a_subnet_without_an_internal_ipv6_range() {
    let rig = Rig::start_dual_stack(&[ZONE], &[]).await;
    no_ipv6_range(&rig, &ILB).await;
    dual_stack_and_ipv6_only(&rig, &ILB).await;
    if have_gcloud("the gcloud check that nothing is left") {
        let g = Gcloud::new(&rig.gce);
        assert_eq!(g.value(&["compute", "forwarding-rules", "list"]), json!([]));
        assert_eq!(g.value(&["compute", "firewall-rules", "list"]), json!([]));
        assert_eq!(g.value(&["compute", "addresses", "list"]), json!([]));
    }
}
