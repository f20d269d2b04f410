//! The internal load balancer (`networking.gke.io/load-balancer-type: Internal`): the VPC carries its
//! traffic from a VM inside the VPC to the backend service's healthy instance-group members, pass-through,
//! and the node takes it with nothing more than its Service's LB-ingress rules; the outside client cannot
//! reach it; deleting the last internal LB removes every object it had, the shared instance groups too.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::time::Duration;

use serde_json::json;

use super::{SVCS, lb_ip, lb_name, patch_svc, svc_path, wait_all_answer};
use crate::support::{self, Cluster, From, gce_objects, last, wait_for};

const SVC: &str = "hostnames-ilb";
/// The fake GCE's internal range (the lab's subnet), as GCE gives internal LBs an address of the subnet.
const INTERNAL_RANGE: (Ipv4Addr, u8) = (Ipv4Addr::new(10, 128, 0, 0), 20);

fn in_internal_range(ip: &str) -> bool {
    let (net, len) = INTERNAL_RANGE;
    let mask = u32::MAX << (32 - len);
    ip.parse::<Ipv4Addr>()
        .is_ok_and(|a| u32::from(a) & mask == u32::from(net))
}

/// Names of the fake's objects of `collection`.
fn names(c: &dyn Cluster, collection: &str) -> BTreeSet<String> {
    gce_objects(c, collection)
        .iter()
        .filter_map(|o| o["name"].as_str().map(str::to_owned))
        .collect()
}

/// 2 pods behind an internal LB Service: the VM reaches both through the internal IP, the client
/// reaches nothing; source ranges apply to the VM; deleted, it leaves nothing behind.
pub fn internal_lb(c: &dyn Cluster) {
    c.scale("hostnames", 2);
    let pods: BTreeSet<String> = c.pods("hostnames").into_iter().map(|p| p.0).collect();
    // Annotated from the start, as `kubectl apply` of such a manifest: never an external LB first.
    support::api(
        c,
        "POST",
        SVCS,
        Some(&json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SVC, "labels": {"app": "hostnames"},
                "annotations": {"networking.gke.io/load-balancer-type": "Internal"}},
            "spec": {"type": "LoadBalancer", "selector": {"app": "hostnames"},
                "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}})),
    );
    let ip = lb_ip(c, SVC);
    assert!(
        in_internal_range(&ip),
        "internal LB IP {ip} outside 10.128.0.0/20"
    );
    let lb = lb_name(c, SVC);
    let fr = gce_objects(c, "forwardingRules")
        .into_iter()
        .find(|f| f["name"] == lb.as_str())
        .unwrap_or_else(|| panic!("no forwarding rule {lb}"));
    assert_eq!(fr["loadBalancingScheme"], "INTERNAL", "{fr}");
    assert_eq!(fr["IPAddress"], ip.as_str(), "{fr}");
    assert_eq!(
        last(fr["backendService"].as_str().unwrap_or_default()),
        lb,
        "{fr}"
    );
    assert!(
        fr["target"].is_null(),
        "an internal rule has no target pool: {fr}"
    );
    assert!(!names(c, "targetPools").contains(&lb), "a target pool for {lb}");

    let url = format!("http://{ip}/");
    let seen = wait_all_answer(c, From::Vm, &url, pods.len());
    assert_eq!(seen, pods, "the VM reached other than the pods");
    let mut nodes: Vec<String> = c.nodes().into_iter().map(|n| n.1).collect();
    nodes.sort();
    let mut backends = c.lb_backends(&ip);
    backends.sort();
    assert_eq!(
        backends, nodes,
        "the internal IP goes to every healthy group member"
    );
    assert!(
        c.get(From::Client, &url).is_none(),
        "the internet client reached the internal LB {ip}"
    );
    println!("    internal LB {ip} ({lb}): the VM reached {seen:?} via {backends:?}; the client nothing");

    // The Service's firewall (source ranges) holds for the VM as for any source.
    let (client, _) = c.client_ips();
    patch_svc(
        c,
        SVC,
        json!({"spec": {"loadBalancerSourceRanges": [format!("{client}/32")]}}),
    );
    wait_for(
        "the VM dropped once the source ranges leave it out",
        Duration::from_secs(30),
        || c.get(From::Vm, &url).is_none().then_some(()),
    );
    assert!(
        c.get(From::Client, &url).is_none(),
        "the client, inside the source ranges, still must not reach an internal address"
    );

    // The last internal LB: upstream deletes the shared instance groups with it.
    support::api(c, "DELETE", &svc_path(SVC), None);
    wait_for(
        &format!("every GCE object of {lb} deleted, and the instance groups"),
        Duration::from_secs(60),
        || {
            let left: Vec<String> = [
                ("forwardingRules", lb.clone()),
                ("backendServices", lb.clone()),
                ("firewalls", format!("k8s-fw-{lb}")),
            ]
            .into_iter()
            .filter(|(k, n)| names(c, k).contains(n))
            .map(|(k, n)| format!("{k}/{n}"))
            .chain(
                names(c, "instanceGroups")
                    .into_iter()
                    .map(|n| format!("instanceGroups/{n}")),
            )
            .chain(
                names(c, "healthChecks")
                    .into_iter()
                    .map(|n| format!("healthChecks/{n}")),
            )
            .collect();
            left.is_empty().then_some(())
        },
    );
    // The finalizers go last, once GCE is clean: the Service object is gone then.
    wait_for(
        &format!("Service {SVC} gone (finalizers removed)"),
        Duration::from_secs(30),
        || {
            let got = c.api("GET", &svc_path(SVC), None);
            got.is_err_and(|e| e.starts_with("404")).then_some(())
        },
    );
    wait_for(
        &format!("the VPC's route for {ip} removed"),
        Duration::from_secs(10),
        || c.lb_backends(&ip).is_empty().then_some(()),
    );
}
