//! IPv6 and dual-stack RBS NetLBs end to end (real controller with `--rbs-netlb`, an API server
//! serving dual-stack Services, the fake GCE; every object read back with the real gcloud when
//! installed, else from the fake's REST API). Expectations follow ingress-gce: the rule from
//! pkg/l4/resources/forwarding_rules_ipv6.go `buildExpectedIPv6ForwardingRule` (`a<uid>-ipv6`,
//! `ipVersion: IPV6`, `ADDR/96`, the subnetwork, EXTERNAL, the IPv4 half's backend service, port
//! range, Premium tier, a description naming the Service only); the firewalls from
//! l4netlbipv6.go `ensureIPv6NodesFirewall` and utils/sourceranges.go (IPv6 source ranges, else
//! `0::0/0`; IPv4 entries only in the IPv4 firewall) and healthchecksl4.go (IPv6 probers
//! `2600:1901:8001::/48`); status from l4netlb.go (ingress IPs in spec.ipFamilies order) and
//! l4/annotations/service.go (the `-ipv6` keys).
#![allow(clippy::unwrap_used)]

mod common;

use common::ipv6::{FW_V6, HC_FW_V6, Kind, dual_stack_and_ipv6_only, no_ipv6_range};
use common::l4::*;
use common::*;
use k8s_openapi::api::core::v1::Service;
use serde_json::{Value, json};

const SUBNET_ANN: &str = "networking.gke.io/load-balancer-subnet";
const BACKEND: &str = "service.kubernetes.io/backend-service";

const NETLB: Kind = Kind {
    asks: (RBS, "enabled"),
    subnet_annotation: SUBNET_ANN,
    subnet: "v6-subnet",
    access: "EXTERNAL",
    backend: |svc| annotations(svc)[BACKEND].clone(),
    // The IPv4 nodes firewall is named like the backend service.
    v4_firewall: |svc| annotations(svc)[BACKEND].clone(),
    probers: "2600:1901:8001::/48",
    check_half,
    not_on_ipv6_only: &["service.kubernetes.io/tcp-forwarding-rule"],
    no_range_note: &[
        "Service default/nov6",
        "does not have external IPv6 ranges",
        SUBNET_ANN,
    ],
};

/// The RBS NetLB's own fields of the IPv6 rule, nodes firewall and check firewall.
fn check_half(svc: &Service, fr: &Value, fw: &Value, _hc_fw: &Value) {
    let a = annotations(svc);
    assert_eq!(fr["loadBalancingScheme"], "EXTERNAL", "{fr}");
    assert_eq!(fr["portRange"], "80-80", "{fr}");
    assert_eq!(fr["networkTier"], "PREMIUM", "{fr}");
    assert_eq!(a[FW_V6], format!("{}-ipv6", a[BACKEND]));
    assert_eq!(fw["allowed"][0]["ports"], json!(["80"]), "{fw}");
    let hc_fw_name = &a[HC_FW_V6];
    assert!(hc_fw_name.ends_with("-l4-shared-hc-fw-ipv6"), "{hc_fw_name}");
}

/// One control plane for both scenarios, the Warning first (it expects no rule or address at all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipv6_rbs_netlbs_dual_stack_ipv6_only_and_a_subnet_without_an_external_ipv6_range() {
    let rig = Rig::start_dual_stack(&[ZONE], &["--rbs-netlb"]).await;
    no_ipv6_range(&rig, &NETLB).await;
    dual_stack_and_ipv6_only(&rig, &NETLB).await;
}
