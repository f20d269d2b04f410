//! IPv6 and dual-stack internal LBs built by svcnet's controller: the operator only makes a
//! dual-stack subnetwork with INTERNAL IPv6 (GCE gives a subnetwork one access type) with gcloud;
//! a Service annotated Internal and `networking.gke.io/internal-load-balancer-subnet` gets
//! ingress-gce's INTERNAL `-ipv6` rule and firewall next to the IPv4 ones and both ingress IPs;
//! the VPC's VM reaches the pods through each, the client does not reach the internal IPv6 one.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::{SVCS, lb_name, svc_path, wait_all_answer};
use crate::support::{self, Cluster, From, gce_objects, wait_for};

const WAIT: Duration = Duration::from_secs(90);
const APP: &str = "web6i";
const SUBNET: &str = "lab-ilb6";
const REGION: &str = "us-central1";

fn gcloud(c: &dyn Cluster, args: &[&str]) -> String {
    c.gcloud(args)
        .unwrap_or_else(|e| panic!("gcloud {}: {e}", args.join(" ")))
}

fn internal_service(c: &dyn Cluster, name: &str, families: &[&str]) {
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
            "metadata": {"name": name, "labels": {"app": APP}, "annotations": {
                "networking.gke.io/load-balancer-type": "Internal",
                "networking.gke.io/internal-load-balancer-subnet": SUBNET}},
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

/// Checks the INTERNAL IPv6 rule the controller made for `svc`, that the VM reaches `pods`
/// through `v6` and the client does not; returns the rule's `/96`.
fn ipv6_half(c: &dyn Cluster, svc: &str, v6: &str, pods: &BTreeSet<String>) -> String {
    let lb = lb_name(c, svc);
    let fr = rule(c, &format!("{lb}-ipv6")).unwrap_or_else(|| panic!("no rule {lb}-ipv6"));
    assert_eq!(fr["ipVersion"], "IPV6", "{fr}");
    assert_eq!(fr["loadBalancingScheme"], "INTERNAL", "{fr}");
    assert_eq!(fr["IPAddress"], format!("{v6}/96"), "{fr}");
    assert!(
        fr["subnetwork"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/{SUBNET}")),
        "{fr}"
    );
    let routed = fr["IPAddress"].as_str().unwrap().to_owned();
    wait_for(&format!("the VPC's route for {routed}"), WAIT, || {
        (c.lb_backends(&routed).len() == c.nodes().len()).then_some(())
    });
    assert_eq!(&wait_all_answer(c, From::Vm, &url(v6), 2), pods);
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
