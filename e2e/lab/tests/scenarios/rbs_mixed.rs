//! Issue 34 on RBS NetLBs built by svcnet's controller: a TCP+UDP Service behind one L3_DEFAULT
//! forwarding rule answering on both protocols, and a weighted Service (`pods-per-node`, ETP Local)
//! whose new connections split across the nodes by their pod counts.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::{SVCS, lb_ip, lb_name, svc_path};
use crate::support::{self, Cluster, From, IMAGE, gce_objects, wait_for};

const RBS: &str = "cloud.google.com/l4-rbs";
const WEIGHTED: &str = "networking.gke.io/weighted-load-balancing";
/// Connections measured for the weighted split.
const CONNECTIONS: usize = 1000;
/// Allowed distance of the measured share from the pod share: about 4 standard deviations of a
/// 1000-connection binomial at p = 0.25 (0.0137), so a correct split fails once in ~10^4 runs,
/// while an unweighted one (0.5) is 4 times further off.
const TOLERANCE: f64 = 0.06;

fn object(c: &dyn Cluster, collection: &str, name: &str) -> Value {
    gce_objects(c, collection)
        .into_iter()
        .find(|o| o["name"] == name)
        .unwrap_or_else(|| panic!("{collection}/{name} missing"))
}

fn delete_svc(c: &dyn Cluster, name: &str, ip: &str) {
    support::api(c, "DELETE", &svc_path(name), None);
    wait_for(
        &format!("{name} deleted (finalizer released)"),
        Duration::from_secs(60),
        || c.api("GET", &svc_path(name), None).is_err().then_some(()),
    );
    wait_for(
        &format!("the VPC's route for {ip} removed"),
        Duration::from_secs(10),
        || c.lb_backends(ip).is_empty().then_some(()),
    );
}

/// A TCP+UDP RBS Service over the `hostnames` pods: the controller's L3_DEFAULT rule, UNSPECIFIED
/// backend service and per-protocol firewall, the l3-forwarding-rule annotation, and answers from
/// the client over TCP (HTTP on 80) and UDP (53) through the one IP.
pub fn mixed_protocols(c: &dyn Cluster) {
    const SVC: &str = "hostnames-mixed";
    let pods: Vec<String> = c.pods("hostnames").into_iter().map(|p| p.0).collect();
    assert!(!pods.is_empty(), "the hostnames pods");
    support::api(
        c,
        "POST",
        SVCS,
        Some(&json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SVC, "annotations": {RBS: "enabled"}},
            "spec": {"type": "LoadBalancer", "selector": {"app": "hostnames"},
                "ports": [
                    {"name": "http", "port": 80, "targetPort": 9376, "protocol": "TCP"},
                    {"name": "dns", "port": 53, "targetPort": 9376, "protocol": "UDP"}]}})),
    );
    let lb = lb_name(c, SVC);
    let ip = lb_ip(c, SVC);
    let svc = wait_for(
        "the l3-forwarding-rule annotation",
        Duration::from_secs(60),
        || {
            let s = c.api("GET", &svc_path(SVC), None).ok()?;
            (s["metadata"]["annotations"]["service.kubernetes.io/l3-forwarding-rule"] == lb.as_str())
                .then_some(s)
        },
    );
    let ann = &svc["metadata"]["annotations"];
    assert!(
        ann["service.kubernetes.io/tcp-forwarding-rule"].is_null()
            && ann["service.kubernetes.io/udp-forwarding-rule"].is_null(),
        "{ann}"
    );
    let rule = object(c, "forwardingRules", &lb);
    assert_eq!(rule["IPProtocol"], "L3_DEFAULT", "{rule}");
    assert_eq!(rule["allPorts"], true, "{rule}");
    assert_eq!(rule["IPAddress"], ip.as_str());
    let bs_name = ann["service.kubernetes.io/backend-service"].as_str().unwrap();
    assert_eq!(object(c, "backendServices", bs_name)["protocol"], "UNSPECIFIED");
    let fw = object(
        c,
        "firewalls",
        ann["service.kubernetes.io/firewall-rule"].as_str().unwrap(),
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
    assert_eq!(allowed.get("tcp"), Some(&json!(["80"])), "{fw}");
    assert_eq!(allowed.get("udp"), Some(&json!(["53"])), "{fw}");

    let tcp = wait_for(
        "an HTTP answer through the L3 rule",
        Duration::from_secs(30),
        || c.get(From::Client, &format!("http://{ip}/")),
    );
    let udp = wait_for(
        "a UDP answer through the L3 rule",
        Duration::from_secs(30),
        || c.udp(From::Client, &format!("{ip}:53")),
    );
    assert!(
        pods.contains(&tcp.trim().to_owned()),
        "TCP answer {tcp:?} not from {pods:?}"
    );
    assert!(
        pods.contains(&udp.trim().to_owned()),
        "UDP answer {udp:?} not from {pods:?}"
    );
    println!("    mixed RBS NetLB {ip} ({lb}, L3_DEFAULT): TCP:80 -> {tcp}, UDP:53 -> {udp}");
    delete_svc(c, SVC, &ip);
}

fn deployment(name: &str, node: &str, replicas: usize) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": "weighted"}},
        "spec": {"replicas": replicas,
            "selector": {"matchLabels": {"app": "weighted", "part": name}},
            "template": {"metadata": {"labels": {"app": "weighted", "part": name}},
                "spec": {"nodeName": node, "containers": [{"name": "serve", "image": IMAGE,
                    "ports": [{"containerPort": 9376}]}]}}}})
}

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

/// 1 pod on the first node, 3 on the second behind a weighted RBS Service (ETP Local): the
/// backend service is WEIGHTED_MAGLEV, each node's check reports its pod count, and of
/// [`CONNECTIONS`] new connections from one client the first node takes 1/4 (within
/// [`TOLERANCE`]).
pub fn weighted(c: &dyn Cluster) {
    const SVC: &str = "weighted";
    let nodes = c.nodes();
    let (one, three) = (nodes[0].0.clone(), nodes[1].0.clone());
    for (name, node, n) in [("weighted-one", &one, 1), ("weighted-three", &three, 3)] {
        support::api(c, "POST", DEPLOYMENTS, Some(&deployment(name, node, n)));
    }
    let pods = wait_for("4 weighted pods running", Duration::from_secs(60), || {
        let p = c.pods("weighted");
        (p.len() == 4).then_some(p)
    });
    let node_of: BTreeMap<String, String> = pods.iter().map(|p| (p.0.clone(), p.2.clone())).collect();
    support::api(
        c,
        "POST",
        SVCS,
        Some(&json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SVC, "annotations": {RBS: "enabled", WEIGHTED: "pods-per-node"}},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                "selector": {"app": "weighted"},
                "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}})),
    );
    let ip = lb_ip(c, SVC);
    let svc = support::api(c, "GET", &svc_path(SVC), None);
    let bs_name = wait_for(
        "the backend service's annotation",
        Duration::from_secs(60),
        || {
            let s = c.api("GET", &svc_path(SVC), None).ok()?;
            s["metadata"]["annotations"]["service.kubernetes.io/backend-service"]
                .as_str()
                .map(str::to_owned)
        },
    );
    let bs = object(c, "backendServices", &bs_name);
    assert_eq!(bs["localityLbPolicy"], "WEIGHTED_MAGLEV", "{bs}");
    let hc_port = svc["spec"]["healthCheckNodePort"].as_u64().unwrap();
    let route = wait_for(
        "both nodes routed with weights 1 and 3",
        Duration::from_secs(60),
        || {
            let r = c.lb_route(&ip);
            (r.contains("weight 1") && r.contains("weight 3")).then_some(r)
        },
    );
    println!(
        "    weighted {ip} (check on node port {hc_port}): {}",
        route.replace('\n', " | ")
    );

    let mut by_node: BTreeMap<String, usize> = BTreeMap::new();
    let mut failed = 0;
    for _ in 0..CONNECTIONS {
        match c.get(From::Client, &format!("http://{ip}/")) {
            Some(pod) => {
                let node = node_of
                    .get(pod.trim())
                    .cloned()
                    .unwrap_or_else(|| format!("? {pod}"));
                *by_node.entry(node).or_default() += 1;
            }
            None => failed += 1,
        }
    }
    let answered: usize = by_node.values().sum();
    let share_one = *by_node.get(&one).unwrap_or(&0) as f64 / answered.max(1) as f64;
    println!(
        "    {CONNECTIONS} connections: {by_node:?}, {failed} failed; {one} (1 pod) took {:.3} (want 0.250 +- {TOLERANCE})",
        share_one
    );
    assert!(
        failed * 100 <= CONNECTIONS,
        "{failed} of {CONNECTIONS} connections failed"
    );
    assert_eq!(
        by_node.len(),
        2,
        "answers from other than the two nodes: {by_node:?}"
    );
    assert!(
        (share_one - 0.25).abs() <= TOLERANCE,
        "{one} took {share_one:.3} of the connections, not 1/4: {by_node:?}"
    );

    delete_svc(c, SVC, &ip);
    for name in ["weighted-one", "weighted-three"] {
        support::api(c, "DELETE", &format!("{DEPLOYMENTS}/{name}"), None);
    }
    wait_for("the weighted pods gone", Duration::from_secs(60), || {
        c.pods("weighted").is_empty().then_some(())
    });
}
