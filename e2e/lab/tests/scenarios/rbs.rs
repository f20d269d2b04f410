//! A backend-service network LB (RBS NetLB) built by svcnet's controller (`--rbs-netlb`, on in the
//! lab overlay) for a Service annotated `cloud.google.com/l4-rbs: enabled`: the NetLB v2 finalizer,
//! ingress-gce's status annotations and an EXTERNAL forwarding rule to a regional backend service
//! over the per-zone groups; the client reaches both pods through the IP, pass-through to every
//! healthy group member. Removing the annotation switches the Service to a target pool (the RBS
//! objects go first), adding it back switches it again (the target-pool objects go first), each
//! time reachable and with nothing of the old kind left; deleted, nothing is left.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::{SVCS, lb_ip, lb_name, svc_path, wait_all_answer};
use crate::support::{self, Cluster, From, gce_objects, wait_for};

const SVC: &str = "hostnames-rbs";
const RBS: &str = "cloud.google.com/l4-rbs";
const V2: &str = "gke.networking.io/l4-netlb-v2";
const V1: &str = "gke.networking.io/l4-netlb-v1";

fn names(c: &dyn Cluster, collection: &str) -> BTreeSet<String> {
    gce_objects(c, collection)
        .iter()
        .filter_map(|o| o["name"].as_str().map(str::to_owned))
        .collect()
}

/// The Service once `done` holds for it and its ingress IP is that of the forwarding rule named
/// `lb`, of the kind `rbs` says (a backend service, else a target pool): during a switch the
/// status still shows the old kind's IP until the new kind converged.
fn wait_svc(c: &dyn Cluster, what: &str, lb: &str, rbs: bool, done: impl Fn(&Value) -> bool) -> Value {
    wait_for(what, Duration::from_secs(90), || {
        let s = c.api("GET", &svc_path(SVC), None).ok()?;
        let rule = gce_objects(c, "forwardingRules")
            .into_iter()
            .find(|r| r["name"] == lb)?;
        let kind_ok = rule[if rbs { "backendService" } else { "target" }].is_string();
        let ip_ok = rule["IPAddress"] == s["status"]["loadBalancer"]["ingress"][0]["ip"];
        (done(&s) && kind_ok && ip_ok).then_some(s)
    })
}

fn finalizers(s: &Value) -> Vec<String> {
    s["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect()
}

fn has_ip(s: &Value) -> bool {
    s["status"]["loadBalancer"]["ingress"][0]["ip"].is_string()
}

fn is_rbs(s: &Value) -> bool {
    finalizers(s) == [V2]
        && has_ip(s)
        && s["metadata"]["annotations"]["service.kubernetes.io/backend-service"].is_string()
}

fn is_target_pool(s: &Value) -> bool {
    finalizers(s).iter().any(|f| f == V1)
        && has_ip(s)
        && s["metadata"]["annotations"]["service.kubernetes.io/backend-service"].is_null()
}

/// The RBS objects the Service's annotations name, by collection.
fn rbs_objects(s: &Value, lb: &str) -> Vec<(&'static str, String)> {
    let a = &s["metadata"]["annotations"];
    let name = |k: &str| a[k].as_str().unwrap().to_owned();
    vec![
        ("forwardingRules", lb.to_owned()),
        ("backendServices", name("service.kubernetes.io/backend-service")),
        ("regionHealthChecks", name("service.kubernetes.io/healthcheck")),
        ("firewalls", name("service.kubernetes.io/firewall-rule")),
        ("firewalls", name("service.kubernetes.io/firewall-rule-for-hc")),
    ]
}

fn present(c: &dyn Cluster, objects: &[(&'static str, String)]) -> Vec<String> {
    objects
        .iter()
        .filter(|(k, n)| names(c, k).contains(n))
        .map(|(k, n)| format!("{k}/{n}"))
        .collect()
}

/// The target-pool LB's own objects (the shared node health check serves other LBs too).
fn target_pool_objects(lb: &str) -> Vec<(&'static str, String)> {
    vec![
        ("targetPools", lb.to_owned()),
        ("firewalls", format!("k8s-fw-{lb}")),
        ("addresses", lb.to_owned()),
    ]
}

/// Every pod answers through `ip` and the VPC routes it to every node.
fn reachable(c: &dyn Cluster, ip: &str, pods: &BTreeSet<String>) -> Vec<String> {
    let seen = wait_all_answer(c, From::Client, &format!("http://{ip}/"), pods.len());
    assert_eq!(&seen, pods, "the client reached other than the pods");
    let mut nodes: Vec<String> = c.nodes().into_iter().map(|n| n.1).collect();
    nodes.sort();
    let mut backends = c.lb_backends(ip);
    backends.sort();
    assert_eq!(backends, nodes, "the IP goes to every healthy node");
    backends
}

fn set_annotation(c: &dyn Cluster, value: Value) {
    support::api(
        c,
        "PATCH",
        &svc_path(SVC),
        Some(&json!({"metadata": {"annotations": {RBS: value}}})),
    );
}

/// 2 pods behind an RBS NetLB the controller builds; switched to a target pool and back; deleted.
pub fn rbs_netlb(c: &dyn Cluster) {
    c.scale("hostnames", 2);
    let pods: BTreeSet<String> = c.pods("hostnames").into_iter().map(|p| p.0).collect();
    support::api(
        c,
        "POST",
        SVCS,
        Some(&json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SVC, "labels": {"app": "hostnames"},
                "annotations": {RBS: "enabled"}},
            "spec": {"type": "LoadBalancer", "selector": {"app": "hostnames"},
                "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}})),
    );
    let lb = lb_name(c, SVC);
    let svc = wait_svc(c, "the controller's RBS NetLB", &lb, true, is_rbs);
    let ip = lb_ip(c, SVC);
    let rbs = rbs_objects(&svc, &lb);
    assert_eq!(present(c, &rbs).len(), rbs.len(), "RBS objects missing: {rbs:?}");
    let rule = gce_objects(c, "forwardingRules")
        .into_iter()
        .find(|r| r["name"] == lb.as_str())
        .unwrap();
    assert_eq!(rule["loadBalancingScheme"], "EXTERNAL");
    assert_eq!(support::last(rule["backendService"].as_str().unwrap()), rbs[1].1);
    assert!(
        !names(c, "targetPools").contains(&lb),
        "a target pool for an RBS Service"
    );
    let backends = reachable(c, &ip, &pods);
    println!(
        "    RBS NetLB {ip} ({lb} -> {}): the client reached {pods:?} via {backends:?}",
        rbs[1].1
    );

    set_annotation(c, Value::Null);
    wait_svc(c, "the switch to a target pool", &lb, false, is_target_pool);
    let tp_ip = lb_ip(c, SVC);
    let left: Vec<String> = present(c, &rbs[1..]);
    assert!(
        left.is_empty(),
        "RBS objects left after the switch to a target pool: {left:?}"
    );
    assert!(names(c, "targetPools").contains(&lb));
    reachable(c, &tp_ip, &pods);
    println!("    switched to a target pool: {tp_ip}, no RBS object left");

    set_annotation(c, json!("enabled"));
    let svc = wait_svc(c, "the switch back to RBS", &lb, true, is_rbs);
    let ip = lb_ip(c, SVC);
    let left = present(c, &target_pool_objects(&lb));
    assert!(
        left.is_empty(),
        "target-pool objects left after the switch to RBS: {left:?}"
    );
    let rbs = rbs_objects(&svc, &lb);
    reachable(c, &ip, &pods);
    println!("    switched back to RBS: {ip}, no target-pool object left");

    support::api(c, "DELETE", &svc_path(SVC), None);
    wait_for(
        &format!("{SVC} deleted (finalizer released)"),
        Duration::from_secs(60),
        || c.api("GET", &svc_path(SVC), None).is_err().then_some(()),
    );
    wait_for(
        &format!("the VPC's route for {ip} removed"),
        Duration::from_secs(10),
        || c.lb_backends(&ip).is_empty().then_some(()),
    );
    let left = present(c, &rbs);
    assert!(left.is_empty(), "left behind: {left:?}");
}
