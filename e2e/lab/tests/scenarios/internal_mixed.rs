//! Issue 34's mixed protocols on an internal LB: one internal Service with TCP 80 and UDP 53 gets
//! one `L3_DEFAULT` all-ports INTERNAL rule over an `UNSPECIFIED` backend service and a firewall
//! allowing each protocol its port, all read back with the real gcloud; the VM inside the VPC gets
//! answers from both pods over TCP and from a pod over UDP through the one IP, the outside client
//! over neither; deleted, the gcloud lists of the load-balancer collections are those from before.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};

use super::{SVCS, lb_ip, lb_name, svc_path, wait_all_answer};
use crate::support::{self, Cluster, From, last, wait_for};

const SVC: &str = "hostnames-ilb-mixed";
const REGION: &str = "us-central1";
/// The collections an internal LB's objects live in, as gcloud lists them: (label, arguments).
/// Health checks by scope: a plain `health-checks list` asks for /aggregated/healthChecks, which
/// the fake does not serve (gcloud only warns and lists nothing).
const LISTS: [(&str, &[&str]); 6] = [
    ("forwarding-rules", &["forwarding-rules", "list"]),
    ("backend-services", &["backend-services", "list"]),
    ("health-checks", &["health-checks", "list", "--global"]),
    ("health-checks", &["health-checks", "list", "--regions", REGION]),
    ("firewall-rules", &["firewall-rules", "list"]),
    ("instance-groups", &["instance-groups", "unmanaged", "list"]),
];

fn gcloud_json(c: &dyn Cluster, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--format=json");
    let out = c
        .gcloud(&all)
        .unwrap_or_else(|e| panic!("gcloud {}: {e}", args.join(" ")));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("gcloud {}: {e}: {out}", args.join(" ")))
}

/// `collection name` of every object gcloud lists in [`LISTS`].
fn gcloud_lists(c: &dyn Cluster) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (label, collection) in LISTS {
        let mut args = vec!["compute"];
        args.extend_from_slice(collection);
        for o in gcloud_json(c, &args).as_array().unwrap() {
            out.insert(format!("{label} {}", o["name"].as_str().unwrap()));
        }
    }
    out
}

/// 2 pods behind an internal TCP+UDP Service, reached from the VM over both protocols; deleted
/// without leftovers.
pub fn internal_mixed(c: &dyn Cluster) {
    c.scale("hostnames", 2);
    let pods: BTreeSet<String> = c.pods("hostnames").into_iter().map(|p| p.0).collect();
    let before = gcloud_lists(c);
    support::api(
        c,
        "POST",
        SVCS,
        Some(&json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SVC, "labels": {"app": "hostnames"},
                "annotations": {"networking.gke.io/load-balancer-type": "Internal"}},
            "spec": {"type": "LoadBalancer", "selector": {"app": "hostnames"},
                "ports": [
                    {"name": "http", "port": 80, "targetPort": 9376, "protocol": "TCP"},
                    {"name": "dns", "port": 53, "targetPort": 9376, "protocol": "UDP"}]}})),
    );
    let ip = lb_ip(c, SVC);
    let lb = lb_name(c, SVC);

    let rule = gcloud_json(
        c,
        &["compute", "forwarding-rules", "describe", &lb, "--region", REGION],
    );
    assert_eq!(rule["loadBalancingScheme"], "INTERNAL", "{rule}");
    assert_eq!(rule["IPProtocol"], "L3_DEFAULT", "{rule}");
    assert_eq!(rule["allPorts"], true, "{rule}");
    assert_eq!(rule["IPAddress"], ip.as_str(), "{rule}");
    assert!(
        rule["target"].is_null(),
        "an internal rule has no target pool: {rule}"
    );
    let bs_name = last(rule["backendService"].as_str().unwrap()).to_owned();
    let bs = gcloud_json(
        c,
        &[
            "compute",
            "backend-services",
            "describe",
            &bs_name,
            "--region",
            REGION,
        ],
    );
    assert_eq!(bs["loadBalancingScheme"], "INTERNAL", "{bs}");
    assert_eq!(bs["protocol"], "UNSPECIFIED", "{bs}");
    let fw = gcloud_json(
        c,
        &["compute", "firewall-rules", "describe", &format!("k8s-fw-{lb}")],
    );
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
        BTreeMap::from([("tcp".into(), json!(["80"])), ("udp".into(), json!(["53"]))]),
        "{fw}"
    );

    let url = format!("http://{ip}/");
    let seen = wait_all_answer(c, From::Vm, &url, pods.len());
    assert_eq!(seen, pods, "the VM reached other than the pods over TCP");
    let udp = wait_for(
        "a UDP answer through the L3 rule from the VM",
        Duration::from_secs(30),
        || c.udp(From::Vm, &format!("{ip}:53")),
    );
    assert!(pods.contains(&udp), "UDP answer {udp:?} not from {pods:?}");
    assert!(
        c.get(From::Client, &url).is_none(),
        "the internet client reached the internal LB {ip} over TCP"
    );
    assert!(
        c.udp(From::Client, &format!("{ip}:53")).is_none(),
        "the internet client reached the internal LB {ip} over UDP"
    );
    println!(
        "    internal mixed LB {ip} ({lb}, L3_DEFAULT -> {bs_name} UNSPECIFIED): the VM got {seen:?} over TCP:80, {udp} over UDP:53; the client nothing"
    );

    support::api(c, "DELETE", &svc_path(SVC), None);
    wait_for(
        &format!("Service {SVC} gone (finalizers removed)"),
        Duration::from_secs(60),
        || {
            let got = c.api("GET", &svc_path(SVC), None);
            got.is_err_and(|e| e.starts_with("404")).then_some(())
        },
    );
    let after = gcloud_lists(c);
    let added: Vec<&String> = after.difference(&before).collect();
    let removed: Vec<&String> = before.difference(&after).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "gcloud lists after the delete differ from before: left {added:?}, gone {removed:?}"
    );
    wait_for(
        &format!("the VPC's route for {ip} removed"),
        Duration::from_secs(10),
        || c.lb_backends(&ip).is_empty().then_some(()),
    );
}
