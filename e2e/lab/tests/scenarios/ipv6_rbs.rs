//! IPv6 and dual-stack RBS NetLBs built by svcnet's controller (`--rbs-netlb`): the operator only
//! turns the cluster's subnetwork dual-stack (EXTERNAL IPv6, as for a dual-stack GKE cluster) with
//! gcloud; the controller makes ingress-gce's `-ipv6` rule and firewall next to the IPv4 ones and
//! writes both ingress IPs; the client reaches the pods through each.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::json;

use super::families::{controller_ipv6_rule, gcloud, ingress, lb_service, url};
use super::{lb_name, svc_path, wait_all_answer};
use crate::support::{self, Cluster, From, wait_for};

const WAIT: Duration = Duration::from_secs(90);
const APP: &str = "web6c";
const RBS: &str = "cloud.google.com/l4-rbs";

fn subnet_stack(c: &dyn Cluster, stack: &str) {
    let mut args = vec![
        "compute",
        "networks",
        "subnets",
        "update",
        "default",
        "--region",
        "us-central1",
        "--stack-type",
        stack,
    ];
    if stack != "IPV4_ONLY" {
        args.extend(["--ipv6-access-type", "EXTERNAL"]);
    }
    gcloud(c, &args);
}

/// Checks the IPv6 rule the controller made for `svc` and that the client reaches `pods` through
/// `v6`; returns the rule's `/96`.
fn ipv6_half(c: &dyn Cluster, svc: &str, v6: &str, pods: &BTreeSet<String>) -> String {
    controller_ipv6_rule(c, &lb_name(c, svc), v6, From::Client, pods, |_| {})
}

fn rbs_service(c: &dyn Cluster, name: &str, families: &[&str]) {
    lb_service(c, name, APP, families, json!({RBS: "enabled"}), None);
}

pub fn controller_ipv6(c: &dyn Cluster) {
    c.run_pods(APP, 2, 9376);
    let pods: BTreeSet<String> = c.pods(APP).into_iter().map(|p| p.0).collect();
    subnet_stack(c, "IPV4_IPV6");
    rbs_service(c, "rbs-dual", &["IPv4", "IPv6"]);
    let ips = ingress(c, "rbs-dual", 2);
    assert!(
        !ips[0].contains(':') && ips[1].contains(':'),
        "ordered by ipFamilies: {ips:?}"
    );
    assert_eq!(&wait_all_answer(c, From::Client, &url(&ips[0]), 2), &pods);
    let dual = ipv6_half(c, "rbs-dual", &ips[1], &pods);

    rbs_service(c, "rbs-v6", &["IPv6"]);
    let ips6 = ingress(c, "rbs-v6", 1);
    let only = ipv6_half(c, "rbs-v6", &ips6[0], &pods);

    for svc in ["rbs-dual", "rbs-v6"] {
        support::api(c, "DELETE", &svc_path(svc), None);
    }
    for routed in [&dual, &only] {
        wait_for(&format!("the VPC's route for {routed} gone"), WAIT, || {
            c.lb_route(routed).trim().is_empty().then_some(())
        });
    }
    c.kubectl(&["delete", "deployment", APP]).unwrap();
    subnet_stack(c, "IPV4_ONLY");
}
