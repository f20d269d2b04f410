//! IPv6 and dual-stack internal LBs built by svcnet's controller: the operator only makes a
//! dual-stack subnetwork with INTERNAL IPv6 (GCE gives a subnetwork one access type) with gcloud;
//! a Service annotated Internal and `networking.gke.io/internal-load-balancer-subnet` gets
//! ingress-gce's INTERNAL `-ipv6` rule and firewall next to the IPv4 ones and both ingress IPs;
//! the VPC's VM reaches the pods through each, the client does not reach the internal IPv6 one.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::json;

use super::families::{controller_ipv6_rule, gcloud, ingress, lb_service, url};
use super::{lb_name, svc_path, wait_all_answer};
use crate::support::{self, Cluster, From, wait_for};

const WAIT: Duration = Duration::from_secs(90);
const APP: &str = "web6i";
const SUBNET: &str = "lab-ilb6";
const REGION: &str = "us-central1";

fn internal_service(c: &dyn Cluster, name: &str, families: &[&str]) {
    let annotations = json!({"networking.gke.io/load-balancer-type": "Internal",
        "networking.gke.io/internal-load-balancer-subnet": SUBNET});
    lb_service(c, name, APP, families, annotations, None);
}

/// Checks the INTERNAL IPv6 rule the controller made for `svc`, that the VM reaches `pods`
/// through `v6` and the client does not; returns the rule's `/96`.
fn ipv6_half(c: &dyn Cluster, svc: &str, v6: &str, pods: &BTreeSet<String>) -> String {
    let routed = controller_ipv6_rule(c, &lb_name(c, svc), v6, From::Vm, pods, |fr| {
        assert_eq!(fr["loadBalancingScheme"], "INTERNAL", "{fr}");
        let subnet = fr["subnetwork"].as_str().unwrap();
        assert!(subnet.ends_with(&format!("/{SUBNET}")), "{fr}");
    });
    assert_eq!(
        c.get(From::Client, &url(v6)),
        None,
        "the internet has no way to an internal IPv6 address"
    );
    routed
}

pub fn controller_internal_ipv6(c: &dyn Cluster) {
    c.run_pods(APP, 2, 9376);
    let pods: BTreeSet<String> = c.pods(APP).into_iter().map(|p| p.0).collect();
    let subnet = [
        "compute",
        "networks",
        "subnets",
        "create",
        SUBNET,
        "--network",
        "default",
        "--range",
        "10.129.2.0/24",
        "--stack-type",
        "IPV4_IPV6",
        "--ipv6-access-type",
        "INTERNAL",
        "--region",
        REGION,
    ];
    gcloud(c, &subnet);
    internal_service(c, "ilb-dual", &["IPv4", "IPv6"]);
    let ips = ingress(c, "ilb-dual", 2);
    assert!(
        !ips[0].contains(':') && ips[1].contains(':'),
        "ordered by ipFamilies: {ips:?}"
    );
    assert_eq!(&wait_all_answer(c, From::Vm, &url(&ips[0]), 2), &pods);
    let dual = ipv6_half(c, "ilb-dual", &ips[1], &pods);

    internal_service(c, "ilb-v6", &["IPv6"]);
    let ips6 = ingress(c, "ilb-v6", 1);
    let only = ipv6_half(c, "ilb-v6", &ips6[0], &pods);

    for svc in ["ilb-dual", "ilb-v6"] {
        support::api(c, "DELETE", &svc_path(svc), None);
    }
    for routed in [&dual, &only] {
        wait_for(&format!("the VPC's route for {routed} gone"), WAIT, || {
            c.lb_route(routed).trim().is_empty().then_some(())
        });
    }
    c.kubectl(&["delete", "deployment", APP]).unwrap();
    // The subnetwork goes once no rule or address of the controller is left in it.
    wait_for(&format!("subnetwork {SUBNET} deleted"), WAIT, || {
        c.gcloud(&[
            "compute", "networks", "subnets", "delete", SUBNET, "--region", REGION, "--quiet",
        ])
        .ok()
    });
}
