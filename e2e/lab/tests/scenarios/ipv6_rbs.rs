//! IPv6 and dual-stack RBS NetLBs built by svcnet's controller (`--rbs-netlb`): the operator only
//! turns the cluster's subnetwork dual-stack (EXTERNAL IPv6, as for a dual-stack GKE cluster) with
//! gcloud; the controller makes ingress-gce's `-ipv6` rule and firewall next to the IPv4 ones and
//! writes both ingress IPs; the client reaches the pods through each.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::{SVCS, lb_name, svc_path, wait_all_answer};
use crate::support::{self, Cluster, From, gce_objects, wait_for};

const WAIT: Duration = Duration::from_secs(90);
const APP: &str = "web6c";
const RBS: &str = "cloud.google.com/l4-rbs";

fn gcloud(c: &dyn Cluster, args: &[&str]) -> String {
    c.gcloud(args)
        .unwrap_or_else(|e| panic!("gcloud {}: {e}", args.join(" ")))
}

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

fn rbs_service(c: &dyn Cluster, name: &str, families: &[&str]) {
    let policy = if families.len() == 2 {
        "RequireDualStack"
    } else {
        "SingleStack"
    };
    support::api(
        c,
        "POST",
        SVCS,
        Some(&json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "labels": {"app": APP}, "annotations": {RBS: "enabled"}},
            "spec": {"type": "LoadBalancer", "selector": {"app": APP},
                "ipFamilyPolicy": policy, "ipFamilies": families,
                "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}})),
    );
}

/// The Service's ingress IPs once it has `n`.
fn ingress(c: &dyn Cluster, name: &str, n: usize) -> Vec<String> {
    wait_for(&format!("{n} ingress IPs for {name}"), WAIT, || {
        let s = c.api("GET", &svc_path(name), None).ok()?;
        let ips: Vec<String> = s["status"]["loadBalancer"]["ingress"]
            .as_array()?
            .iter()
            .filter_map(|i| i["ip"].as_str().map(str::to_owned))
            .collect();
        (ips.len() == n).then_some(ips)
    })
}

fn url(ip: &str) -> String {
    if ip.contains(':') {
        format!("http://[{ip}]:80/")
    } else {
        format!("http://{ip}:80/")
    }
}

fn rule(c: &dyn Cluster, name: &str) -> Option<Value> {
    gce_objects(c, "forwardingRules")
        .into_iter()
        .find(|r| r["name"] == name)
}

/// Checks the IPv6 rule the controller made for `svc` and that the client reaches `pods` through
/// `v6`; returns the rule's `/96`.
fn ipv6_half(c: &dyn Cluster, svc: &str, v6: &str, pods: &BTreeSet<String>) -> String {
    let lb = lb_name(c, svc);
    let fr = rule(c, &format!("{lb}-ipv6")).unwrap_or_else(|| panic!("no rule {lb}-ipv6"));
    assert_eq!(fr["ipVersion"], "IPV6", "{fr}");
    assert_eq!(fr["IPAddress"], format!("{v6}/96"), "{fr}");
    let routed = fr["IPAddress"].as_str().unwrap().to_owned();
    wait_for(&format!("the VPC's route for {routed}"), WAIT, || {
        (c.lb_backends(&routed).len() == c.nodes().len()).then_some(())
    });
    assert_eq!(&wait_all_answer(c, From::Client, &url(v6), 2), pods);
    routed
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
