//! A backend-service network LB (RBS NetLB, as GKE's controller builds it): svcnet's controller
//! leaves a Service annotated `cloud.google.com/l4-rbs: enabled` alone (no target pool, no
//! finalizer); the objects such an LB has are made here through the fake GCE's API with the names
//! and fields GKE's controller gives them (regional health check on 10256 and its firewall, EXTERNAL
//! backend service over per-zone groups of the nodes, EXTERNAL forwarding rule pointing at it, nodes
//! firewall to the IP), and the lab's VPC carries the client's traffic through that rule to the
//! group members' pods, pass-through. Deleted, the rule's route goes and nothing is left.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::{SVCS, lb_name, svc_path, wait_all_answer};
use crate::support::{self, Cluster, From, gce, gce_objects, wait_for};

const SVC: &str = "hostnames-rbs";
/// Names as ingress-gce's L4 namer would give them (any name works for the VPC; these are apart
/// from the controller's own objects, so the leak check sees only what this step leaves).
const HC: &str = "k8s2-labrbs00-l4-shared-hc";
const BS: &str = "k8s2-labrbs00-default-hostnames-rbs-00000000";
const GROUP: &str = "k8s-ig--labrbs";

fn names(c: &dyn Cluster, collection: &str) -> BTreeSet<String> {
    gce_objects(c, collection)
        .iter()
        .filter_map(|o| o["name"].as_str().map(str::to_owned))
        .collect()
}

/// `/compute/v1/projects/P/<rest>`, with `{region}` replaced.
fn path(state: &Value, rest: &str) -> String {
    let rest = rest.replace("{region}", state["region"].as_str().unwrap());
    format!(
        "/compute/v1/projects/{}/{rest}",
        state["project"].as_str().unwrap()
    )
}

/// The per-zone groups of every instance, the regional check and its firewall, the backend
/// service and the rule; returns the rule's IP.
fn build_rbs(c: &dyn Cluster, lb: &str) -> String {
    let state = gce(c, "GET", "/_fake/state", None);
    let instances = state["instances"].as_array().cloned().unwrap_or_default();
    let mut zones: BTreeSet<String> = BTreeSet::new();
    let mut tags: BTreeSet<String> = BTreeSet::new();
    for i in &instances {
        let zone = support::last(i["zone"].as_str().unwrap()).to_owned();
        if zones.insert(zone.clone()) {
            gce(
                c,
                "POST",
                &path(&state, &format!("zones/{zone}/instanceGroups")),
                Some(&json!({"name": GROUP})),
            );
        }
        let body = json!({"instances": [{"instance": i["selfLink"]}]});
        let add = format!("zones/{zone}/instanceGroups/{GROUP}/addInstances");
        gce(c, "POST", &path(&state, &add), Some(&body));
        for t in i["tags"]["items"].as_array().into_iter().flatten() {
            tags.insert(t.as_str().unwrap().to_owned());
        }
    }
    let hc = json!({"name": HC, "type": "HTTP", "checkIntervalSec": 8, "timeoutSec": 1,
        "healthyThreshold": 1, "unhealthyThreshold": 3,
        "httpHealthCheck": {"port": 10256, "requestPath": "/healthz"}});
    gce(
        c,
        "POST",
        &path(&state, "regions/{region}/healthChecks"),
        Some(&hc),
    );
    let firewalls = path(&state, "global/firewalls");
    let hc_fw = json!({"name": format!("{HC}-fw"), "targetTags": tags,
        "sourceRanges": ["130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"],
        "allowed": [{"IPProtocol": "TCP", "ports": ["10256"]}]});
    gce(c, "POST", &firewalls, Some(&hc_fw));
    let backends: Vec<Value> = zones
        .iter()
        .map(|z| json!({"group": format!("zones/{z}/instanceGroups/{GROUP}")}))
        .collect();
    let bs = json!({"name": BS, "loadBalancingScheme": "EXTERNAL", "protocol": "TCP",
        "sessionAffinity": "NONE", "connectionDraining": {"drainingTimeoutSec": 30},
        "healthChecks": [format!("regions/{}/healthChecks/{HC}", state["region"].as_str().unwrap())],
        "backends": backends});
    gce(
        c,
        "POST",
        &path(&state, "regions/{region}/backendServices"),
        Some(&bs),
    );
    let rules = path(&state, "regions/{region}/forwardingRules");
    let fr = json!({"name": lb, "loadBalancingScheme": "EXTERNAL", "IPProtocol": "TCP",
        "portRange": "80-80", "networkTier": "PREMIUM",
        "backendService": format!("regions/{}/backendServices/{BS}", state["region"].as_str().unwrap())});
    gce(c, "POST", &rules, Some(&fr));
    let ip = gce(c, "GET", &format!("{rules}/{lb}"), None)["IPAddress"]
        .as_str()
        .unwrap()
        .to_owned();
    let nodes_fw = json!({"name": BS, "targetTags": tags, "sourceRanges": ["0.0.0.0/0"],
        "destinationRanges": [format!("{ip}/32")], "allowed": [{"IPProtocol": "TCP", "ports": ["80"]}]});
    gce(c, "POST", &firewalls, Some(&nodes_fw));
    ip
}

fn delete_rbs(c: &dyn Cluster, lb: &str) {
    let state = gce(c, "GET", "/_fake/state", None);
    for rest in [
        format!("regions/{{region}}/forwardingRules/{lb}"),
        format!("global/firewalls/{BS}"),
        format!("regions/{{region}}/backendServices/{BS}"),
        format!("regions/{{region}}/healthChecks/{HC}"),
        format!("global/firewalls/{HC}-fw"),
    ] {
        gce(c, "DELETE", &path(&state, &rest), None);
    }
    for g in gce_objects(c, "instanceGroups")
        .iter()
        .filter(|g| g["name"] == GROUP)
    {
        let zone = support::last(g["zone"].as_str().unwrap());
        gce(
            c,
            "DELETE",
            &path(&state, &format!("zones/{zone}/instanceGroups/{GROUP}")),
            None,
        );
    }
}

/// 2 pods behind an RBS NetLB: the controller builds nothing for the Service; with the objects
/// made as GKE's controller makes them and the IP in the Service's status, the client reaches both
/// pods through the rule's IP, routed to the healthy group members; deleted, nothing is left.
pub fn rbs_netlb(c: &dyn Cluster) {
    c.scale("hostnames", 2);
    let pods: BTreeSet<String> = c.pods("hostnames").into_iter().map(|p| p.0).collect();
    support::api(
        c,
        "POST",
        SVCS,
        Some(&json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SVC, "labels": {"app": "hostnames"},
                "annotations": {"cloud.google.com/l4-rbs": "enabled"}},
            "spec": {"type": "LoadBalancer", "selector": {"app": "hostnames"},
                "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}})),
    );
    let lb = lb_name(c, SVC);
    // Another controller's Service: a resync later, still no object of ours and no finalizer.
    std::thread::sleep(Duration::from_secs(3));
    let svc = support::api(c, "GET", &svc_path(SVC), None);
    assert!(
        svc["metadata"]["finalizers"].is_null(),
        "finalizers on an RBS Service: {svc}"
    );
    for collection in ["forwardingRules", "targetPools", "addresses"] {
        assert!(
            !names(c, collection).contains(&lb),
            "{collection}/{lb} made for an RBS Service"
        );
    }

    let ip = build_rbs(c, &lb);
    support::api(
        c,
        "PATCH",
        &format!("{}/status", svc_path(SVC)),
        Some(&json!({"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}})),
    );
    let url = format!("http://{ip}/");
    let seen = wait_all_answer(c, From::Client, &url, pods.len());
    assert_eq!(seen, pods, "the client reached other than the pods");
    let mut nodes: Vec<String> = c.nodes().into_iter().map(|n| n.1).collect();
    nodes.sort();
    let mut backends = c.lb_backends(&ip);
    backends.sort();
    assert_eq!(backends, nodes, "the IP goes to every healthy group member");
    println!("    RBS NetLB {ip} ({lb} -> {BS}): the client reached {seen:?} via {backends:?}");

    delete_rbs(c, &lb);
    support::api(c, "DELETE", &svc_path(SVC), None);
    wait_for(
        &format!("the VPC's route for {ip} removed"),
        Duration::from_secs(10),
        || c.lb_backends(&ip).is_empty().then_some(()),
    );
    let left: Vec<String> = [
        ("forwardingRules", lb.clone()),
        ("backendServices", BS.to_owned()),
        ("regionHealthChecks", HC.to_owned()),
        ("firewalls", BS.to_owned()),
        ("firewalls", format!("{HC}-fw")),
        ("instanceGroups", GROUP.to_owned()),
    ]
    .into_iter()
    .filter(|(k, n)| names(c, k).contains(n))
    .map(|(k, n)| format!("{k}/{n}"))
    .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
