//! Changes to the cluster around running load balancers: nodes joining and leaving, the controller
//! and the API server crashing and coming back, GCE failing calls, and the leak check at the end.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::support::{Cluster, Component, From, gce, gce_objects, last, wait_for};

fn pool_members(c: &dyn Cluster, lb: &str) -> Vec<String> {
    gce_objects(c, "targetPools")
        .iter()
        .find(|p| p["name"] == lb)
        .map(|p| {
            p["instances"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i.as_str().map(|s| last(s).to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

fn has_route_to(c: &dyn Cluster, node: &str) -> bool {
    gce_objects(c, "routes")
        .iter()
        .any(|r| r["nextHopInstance"].as_str().is_some_and(|u| last(u) == node))
}

/// Every request of `n` from the client to `ip` is answered by a pod of the Service.
fn lb_keeps_answering(c: &dyn Cluster, ip: &str, n: usize) {
    let seen = answers(c, From::Client, &format!("http://{ip}/"), n);
    assert!(
        !seen.contains("<none>") && seen.iter().all(|s| s.starts_with("hostnames-")),
        "LB {ip} answers: {seen:?}"
    );
}

/// A node joins: it gets a route, its proxy serves the ClusterIP, the LB's pool gains its instance and
/// the network sends LB traffic to it (its health check passes).
pub fn node_add(c: &dyn Cluster, cluster_ip: &str, ip: &str) -> String {
    let node = c.add_node();
    let node_ip = c.nodes().into_iter().find(|n| n.0 == node).unwrap().1;
    let lb = lb_name(c, "hostnames");
    wait_for(&format!("{node} in pool {lb}"), Duration::from_secs(60), || {
        pool_members(c, &lb).contains(&node).then_some(())
    });
    assert!(has_route_to(c, &node), "no GCE route to {node}");
    let name = wait_answer(c, From::Node(&node), &format!("http://{cluster_ip}/"));
    assert!(name.starts_with("hostnames-"), "{name}");
    wait_for(
        &format!("LB traffic sent to {node}"),
        Duration::from_secs(60),
        || c.lb_backends(ip).contains(&node_ip).then_some(()),
    );
    lb_keeps_answering(c, ip, 5);
    // The CloudLoadBalancer record follows the pool.
    super::basics::cloudloadbalancer_row(c, "hostnames", ip);
    node
}

/// The node leaves: the pool loses its instance, its route goes, the network stops sending LB traffic
/// to it, and the LB keeps answering.
pub fn node_remove(c: &dyn Cluster, node: &str, ip: &str) {
    let node_ip = c.nodes().into_iter().find(|n| n.0 == node).unwrap().1;
    c.remove_node(node);
    let lb = lb_name(c, "hostnames");
    wait_for(
        &format!("{node} out of pool {lb}"),
        Duration::from_secs(60),
        || (!pool_members(c, &lb).contains(&node.to_owned())).then_some(()),
    );
    wait_for(
        &format!("the route to {node} deleted"),
        Duration::from_secs(60),
        || (!has_route_to(c, node)).then_some(()),
    );
    wait_for(
        &format!("no LB traffic to {node_ip}"),
        Duration::from_secs(30),
        || (!c.lb_backends(ip).contains(&node_ip)).then_some(()),
    );
    lb_keeps_answering(c, ip, 5);
    super::basics::cloudloadbalancer_row(c, "hostnames", ip);
}

/// How many objects of each LB collection belong to `svc` (by the service-name in their description).
fn objects_of(c: &dyn Cluster, svc: &str) -> BTreeMap<&'static str, usize> {
    let state = gce(c, "GET", "/_fake/state", None);
    let needle = format!("\"kubernetes.io/service-name\":\"default/{svc}\"");
    [
        "forwardingRules",
        "targetPools",
        "addresses",
        "firewalls",
        "httpHealthChecks",
    ]
    .into_iter()
    .map(|k| {
        let n = state[k]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|o| {
                o["description"]
                    .as_str()
                    .is_some_and(|d| d.replace(' ', "").contains(&needle))
            })
            .count();
        (k, n)
    })
    .collect()
}

/// Exactly one forwarding rule, target pool and `k8s-fw-` firewall per LoadBalancer Service, named
/// after it, and nothing more (duplicates would show as extra objects under other names).
fn one_lb_per_service(c: &dyn Cluster) {
    let svcs = crate::support::api(c, "GET", SVCS, None);
    let lbs: Vec<String> = svcs["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["spec"]["type"] == "LoadBalancer")
        .map(|s| lb_name(c, s["metadata"]["name"].as_str().unwrap()))
        .collect();
    let state = gce(c, "GET", "/_fake/state", None);
    let names = |k: &str, prefix: &str| -> Vec<String> {
        let mut v: Vec<String> = state[k]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["name"].as_str())
            .filter(|n| n.starts_with(prefix))
            .map(str::to_owned)
            .collect();
        v.sort();
        v
    };
    let mut want: Vec<String> = lbs.clone();
    want.sort();
    assert_eq!(names("forwardingRules", ""), want, "forwarding rules");
    assert_eq!(names("targetPools", ""), want, "target pools");
    let fws: Vec<String> = want.iter().map(|l| format!("k8s-fw-{l}")).collect();
    assert_eq!(names("firewalls", "k8s-fw-"), fws, "k8s-fw- firewalls");
    assert!(
        names("addresses", "").len() <= want.len(),
        "more addresses than LBs: {:?}",
        names("addresses", "")
    );
}

/// The controller is killed while it creates a LB (its forwarding-rule insert is slowed down by the
/// fake): the existing LB keeps working; after the restart the new LB converges with one object of
/// each kind, and a change made after the restart (widening a source range) is applied.
pub fn controller_crash(c: &dyn Cluster, hostnames_ip: &str, ranged_ip: &str) {
    gce(
        c,
        "POST",
        "/_fake/faults",
        Some(&json!({"method": "POST", "pathRegex": "/forwardingRules$", "count": 1, "delayMs": 3000})),
    );
    create_svc(
        c,
        "crash",
        "hostnames",
        json!({"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}),
    );
    wait_for(
        "the controller inside the slowed forwarding-rule insert",
        Duration::from_secs(60),
        || {
            let faults = gce(c, "GET", "/_fake/faults", None);
            faults
                .as_array()
                .or_else(|| faults["faults"].as_array())
                .into_iter()
                .flatten()
                .any(|f| f["hits"].as_u64().unwrap_or(0) > 0)
                .then_some(())
        },
    );
    c.stop(Component::CloudController);
    gce(c, "DELETE", "/_fake/faults", None);
    lb_keeps_answering(c, hostnames_ip, 3);
    c.start(Component::CloudController);
    let ip = lb_ip(c, "crash");
    wait_answer(c, From::Client, &format!("http://{ip}/"));
    let counts = objects_of(c, "crash");
    assert_eq!(counts["forwardingRules"], 1, "{counts:?}");
    assert_eq!(counts["targetPools"], 1, "{counts:?}");
    assert!(counts.values().all(|n| *n <= 1), "duplicates: {counts:?}");
    one_lb_per_service(c);
    let (inside, outside) = c.client_ips();
    patch_svc(
        c,
        "ranged",
        json!({"spec": {"loadBalancerSourceRanges": [format!("{inside}/32"), format!("{outside}/32")]}}),
    );
    wait_answer(c, From::Client2, &format!("http://{ranged_ip}/"));
}

/// kube-apiserver is killed and restarted (etcd keeps the objects), and changes are made right after
/// it is back, before the proxies and the controller have re-watched; then etcd is compacted past them.
/// The watchers resume from revisions before the restart, which the new API server's watch cache and
/// (after the compaction) etcd no longer hold: 410 Gone, and only a relist shows them the changes. More
/// changes follow (a scale-up, a new Service). Every node must end up with every change (a Service
/// re-ported, two created, endpoints added and removed) and the new LB must answer.
pub fn apiserver_restart_and_compaction(c: &dyn Cluster, hostnames_ip: &str) {
    let before = create_svc(
        c,
        "churn-a",
        "hostnames",
        json!({"ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}),
    );
    let cip_a = before["spec"]["clusterIP"].as_str().unwrap().to_owned();
    for (node, _) in c.nodes() {
        wait_answer(c, From::Node(&node), &format!("http://{cip_a}/"));
    }
    c.stop(Component::ApiServer);
    lb_keeps_answering(c, hostnames_ip, 3);
    c.start(Component::ApiServer);
    // Right away: the components' watches are still down (they back off before re-watching).
    patch_svc(
        c,
        "churn-a",
        json!({"spec": {"ports": [{"port": 8080, "targetPort": 9376, "protocol": "TCP"}]}}),
    );
    let svc = create_svc(
        c,
        "after-restart",
        "hostnames",
        json!({"type": "LoadBalancer", "ports": [{"port": 8080, "targetPort": 9376, "protocol": "TCP"}]}),
    );
    let rev = c.compact_etcd();
    println!("    etcd compacted at revision {rev}");
    c.scale("hostnames", 3);
    let churn_c = create_svc(
        c,
        "churn-c",
        "hostnames",
        json!({"ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}),
    );
    let cip = svc["spec"]["clusterIP"].as_str().unwrap().to_owned();
    let cip_c = churn_c["spec"]["clusterIP"].as_str().unwrap().to_owned();
    let three: BTreeSet<String> = c.pods("hostnames").into_iter().map(|p| p.0).collect();
    assert_eq!(three.len(), 3, "{three:?}");
    for (node, _) in c.nodes() {
        let from = From::Node(&node);
        wait_answer(c, from, &format!("http://{cip_a}:8080/"));
        wait_for(
            &format!("churn-a's old port 80 closed on {node}"),
            Duration::from_secs(30),
            || c.get(from, &format!("http://{cip_a}/")).is_none().then_some(()),
        );
        wait_answer(c, from, &format!("http://{cip}:8080/"));
        let seen = wait_all_answer(c, from, &format!("http://{cip_c}/"), 3);
        assert_eq!(
            seen, three,
            "churn-c on {node} answers from other pods than the 3 running"
        );
    }
    let ip = lb_ip(c, "after-restart");
    wait_answer(c, From::Client, &format!("http://{ip}:8080/"));
    // Endpoints removed after the faults reach the nodes too. The pod scaled away first drains: the
    // EndpointSlice controller lists it as terminating (serving, not ready) while the agent keeps it up.
    c.kubectl(&["scale", "deployment", "hostnames", "--replicas", "2"])
        .unwrap_or_else(|e| panic!("kubectl scale: {e}"));
    let slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io/service-name%3Dchurn-c";
    let draining = wait_for(
        "a terminating, serving, not ready endpoint of churn-c",
        Duration::from_secs(5),
        || {
            let list = c.api("GET", slices, None).ok()?;
            list["items"]
                .as_array()?
                .iter()
                .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
                .find(|e| {
                    let cond = &e["conditions"];
                    cond["terminating"] == true && cond["serving"] == true && cond["ready"] == false
                })
                .and_then(|e| e["targetRef"]["name"].as_str().map(str::to_owned))
        },
    );
    assert!(three.contains(&draining), "{draining} was not one of {three:?}");
    c.scale("hostnames", 2);
    let two: BTreeSet<String> = c.pods("hostnames").into_iter().map(|p| p.0).collect();
    for (node, _) in c.nodes() {
        let url = format!("http://{cip_c}/");
        wait_for(
            &format!("churn-c on {node} answering only from the 2 pods left"),
            Duration::from_secs(30),
            || {
                answers(c, From::Node(&node), &url, 8)
                    .is_subset(&two)
                    .then_some(())
            },
        );
    }
    // The faults did what they are for: every proxy's watches were refused with 410 (resumed from a
    // resourceVersion the restarted API server no longer serves) and had to relist.
    for (node, _) in c.nodes() {
        let log = c.log(&format!("proxy-{node}"));
        assert!(
            log.contains("too old resource version"),
            "proxy on {node} never got 410 Gone: the step did not exercise a relist"
        );
    }
    for name in ["churn-a", "churn-c"] {
        crate::support::api(c, "DELETE", &svc_path(name), None);
    }
}

/// GCE fails calls while a LB is created (503s on pool inserts, a forwarding-rule operation that ends
/// in error): the LB still converges, and every injected fault was actually hit.
pub fn gce_faults(c: &dyn Cluster) {
    for f in [
        json!({"method": "POST", "pathRegex": "/targetPools$", "count": 2, "status": 503}),
        json!({"method": "POST", "pathRegex": "/forwardingRules$", "count": 1, "status": 503, "mode": "operation"}),
    ] {
        gce(c, "POST", "/_fake/faults", Some(&f));
    }
    create_svc(
        c,
        "faulty",
        "hostnames",
        json!({"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}),
    );
    let ip = lb_ip(c, "faulty");
    wait_answer(c, From::Client, &format!("http://{ip}/"));
    let faults = gce(c, "GET", "/_fake/faults", None);
    let list: Vec<Value> = faults
        .as_array()
        .or_else(|| faults["faults"].as_array())
        .cloned()
        .unwrap_or_default();
    assert_eq!(list.len(), 2, "{faults}");
    for f in &list {
        assert!(f["remaining"].as_u64() == Some(0), "fault not used up: {f}");
    }
    gce(c, "DELETE", "/_fake/faults", None);
    let counts = objects_of(c, "faulty");
    assert!(counts.values().all(|n| *n <= 1), "duplicates: {counts:?}");
    one_lb_per_service(c);
}

/// Every Service deleted: the controller removes every GCE object it made (nothing named `k8s-` and
/// no forwarding rule, pool, address or health check is left), and no CloudLoadBalancer remains; the
/// nodes' routes stay, one per node.
pub fn leak_check(c: &dyn Cluster) {
    let svcs = crate::support::api(c, "GET", SVCS, None);
    for s in svcs["items"].as_array().into_iter().flatten() {
        let name = s["metadata"]["name"].as_str().unwrap();
        if name != "kubernetes" {
            crate::support::api(c, "DELETE", &svc_path(name), None);
        }
    }
    wait_for(
        "every Service gone (finalizers done)",
        Duration::from_secs(90),
        || {
            let left = crate::support::api(c, "GET", SVCS, None)["items"]
                .as_array()
                .map_or(0, |a| {
                    a.iter().filter(|s| s["metadata"]["name"] != "kubernetes").count()
                });
            (left == 0).then_some(())
        },
    );
    // Polled by hand so a failure lists what leaked.
    let start = std::time::Instant::now();
    loop {
        let state = gce(c, "GET", "/_fake/state", None);
        let mut leaks = Vec::new();
        for k in [
            "forwardingRules",
            "targetPools",
            "addresses",
            "httpHealthChecks",
            "firewalls",
            // Internal LBs' (the instance groups go with the last one, as upstream deletes them).
            "backendServices",
            "healthChecks",
            "instanceGroups",
            // RBS NetLBs' (their firewalls are named `k8s2-`).
            "regionHealthChecks",
        ] {
            for o in state[k].as_array().into_iter().flatten() {
                let name = o["name"].as_str().unwrap_or_default();
                if k != "firewalls" || name.starts_with("k8s-") || name.starts_with("k8s2-") {
                    leaks.push(format!("{k}/{name}"));
                }
            }
        }
        if leaks.is_empty() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "GCE objects left 60s after every Service was deleted: {leaks:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // Routes stay for the nodes, and only for instances that still exist (the removed node's went).
    for (node, _) in &c.nodes() {
        assert!(has_route_to(c, node), "no route to {node}");
    }
    let instances: Vec<String> = gce_objects(c, "instances")
        .iter()
        .filter_map(|i| i["name"].as_str().map(str::to_owned))
        .collect();
    for r in gce_objects(c, "routes") {
        let hop = last(r["nextHopInstance"].as_str().unwrap_or_default()).to_owned();
        assert!(instances.contains(&hop), "route to a gone instance: {r}");
    }
    let clbs = crate::support::api(c, "GET", "/apis/svcnet.dev/v1alpha1/cloudloadbalancers", None);
    assert_eq!(
        clbs["items"].as_array().map_or(0, Vec::len),
        0,
        "CloudLoadBalancers left: {clbs}"
    );
}
