//! The walkthrough's steps and the Service features: ClusterIP across nodes, NodePort behind the GCE
//! firewall, the LB IP, the CloudLoadBalancer row, UDP, session affinity, source ranges, ETP Local.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::support::{Cluster, From, gce, gce_objects, wait_for};

/// Each svcnet binary reads a kubeconfig of its own ServiceAccount (not an admin one), and RBAC holds
/// it to its manifests' ClusterRole (checked with `kubectl auth can-i` as that identity).
pub fn identities(c: &dyn Cluster) {
    let may = |component: &str, verb: &str, resource: &str, want: bool| {
        let (ok, said) = c.kubectl_as(component, &["auth", "can-i", verb, resource, "-A"]);
        assert_eq!(
            (ok, said.as_str()),
            (want, if want { "yes" } else { "no" }),
            "{component}: can-i {verb} {resource}"
        );
    };
    for component in ["svcnet-proxy", "svcnet-cloud-controller"] {
        let (ok, user) = c.kubectl_as(
            component,
            &["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"],
        );
        assert!(ok, "{component}: kubectl auth whoami failed");
        assert_eq!(user, format!("system:serviceaccount:kube-system:{component}"));
        may(component, "watch", "services", true);
        may(component, "create", "pods", false);
    }
    may("svcnet-proxy", "watch", "endpointslices.discovery.k8s.io", true);
    may("svcnet-proxy", "patch", "services/status", false);
    may("svcnet-cloud-controller", "patch", "services/status", true);
}

pub struct Hostnames {
    pub cluster_ip: String,
    pub node_port: u64,
    pub pods: BTreeSet<String>,
}

/// 2 pods (one per node) behind a NodePort Service; the ClusterIP from node-1 reaches both, the one on
/// node-2 only through the GCE route the controller made.
pub fn cluster_ip_across_nodes(c: &dyn Cluster) -> Hostnames {
    c.run_pods("hostnames", 2, 9376);
    let svc = create_svc(
        c,
        "hostnames",
        "hostnames",
        json!({"type": "NodePort", "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}),
    );
    let cluster_ip = svc["spec"]["clusterIP"].as_str().unwrap().to_owned();
    let node_port = svc["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
    let node1 = c.nodes()[0].0.clone();
    let pods = wait_all_answer(c, From::Node(&node1), &format!("http://{cluster_ip}/"), 2);
    assert_eq!(
        pods,
        pod_names(c, "hostnames"),
        "answers are not the Service's pods"
    );
    kubectl_shows_pods_and_endpoints(c, "hostnames", 9376);
    Hostnames {
        cluster_ip,
        node_port,
        pods,
    }
}

/// The walkthrough's `kubectl get pod,endpoints,service -o wide -l app=<app>` (the real kubectl): each
/// pod the cluster made is a Running 1/1 row with its IP and node, and the Endpoints named like the
/// Service lists every pod IP with the target port.
pub fn kubectl_shows_pods_and_endpoints(c: &dyn Cluster, app: &str, target_port: u16) {
    let made = c.pods(app);
    assert_eq!(made.len(), 2, "{made:?}");
    let want_pods: BTreeSet<Vec<String>> = made
        .iter()
        .map(|(name, ip, node)| {
            [&format!("pod/{name}"), "1/1", "Running", "0", ip, node]
                .map(str::to_owned)
                .to_vec()
        })
        .collect();
    let want_eps: BTreeSet<String> = made
        .iter()
        .map(|(_, ip, _)| format!("{ip}:{target_port}"))
        .collect();
    let sel = format!("app={app}");
    let args = ["get", "pod,endpoints,service", "-o", "wide", "-l", &sel];
    let start = std::time::Instant::now();
    loop {
        let out = c.kubectl(&args).unwrap_or_else(|e| e);
        let rows: Vec<BTreeMap<String, String>> = kubectl_tables(&out).into_iter().flatten().collect();
        let cell = |r: &BTreeMap<String, String>, k: &str| r.get(k).cloned().unwrap_or_default();
        let pods: BTreeSet<Vec<String>> = rows
            .iter()
            .filter(|r| cell(r, "NAME").starts_with("pod/"))
            .map(|r| {
                ["NAME", "READY", "STATUS", "RESTARTS", "IP", "NODE"]
                    .map(|k| cell(r, k))
                    .to_vec()
            })
            .collect();
        let eps: BTreeSet<String> = rows
            .iter()
            .filter(|r| cell(r, "NAME") == format!("endpoints/{app}"))
            .flat_map(|r| {
                cell(r, "ENDPOINTS")
                    .split(',')
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect();
        let svc = rows.iter().any(|r| cell(r, "NAME") == format!("service/{app}"));
        // The agent writes every 500 ms: give it a few rounds before judging.
        if (pods == want_pods && eps == want_eps && svc) || start.elapsed() > Duration::from_secs(20) {
            assert_eq!(pods, want_pods, "pod rows:\n{out}");
            assert_eq!(eps, want_eps, "endpoints row:\n{out}");
            assert!(svc, "no service row:\n{out}");
            println!("{out}");
            return;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// From outside, the NodePort is closed (GCE denies ingress) until a firewall rule targets the nodes.
pub fn nodeport_behind_firewall(c: &dyn Cluster, h: &Hostnames) {
    let node_ip = c.nodes()[0].1.clone();
    let url = format!("http://{node_ip}:{}/", h.node_port);
    assert!(
        c.get(From::Client, &url).is_none(),
        "NodePort open without a firewall rule"
    );
    let tag = gce_objects(c, "instances")[0]["tags"]["items"][0]
        .as_str()
        .unwrap()
        .to_owned();
    gce(
        c,
        "POST",
        "/compute/v1/projects/svcnet-lab/global/firewalls",
        Some(
            &json!({"name": "allow-nodeport", "network": "global/networks/default",
            "allowed": [{"IPProtocol": "tcp", "ports": [h.node_port.to_string()]}],
            "sourceRanges": ["0.0.0.0/0"], "targetTags": [tag]}),
        ),
    );
    let name = wait_answer(c, From::Client, &url);
    assert!(h.pods.contains(&name), "{name} not one of {:?}", h.pods);
}

/// type LoadBalancer: the client reaches a pod through the LB IP the controller made.
pub fn load_balancer(c: &dyn Cluster, h: &Hostnames) -> String {
    patch_svc(c, "hostnames", json!({"spec": {"type": "LoadBalancer"}}));
    let ip = lb_ip(c, "hostnames");
    let name = wait_answer(c, From::Client, &format!("http://{ip}/"));
    assert!(h.pods.contains(&name), "{name} not one of {:?}", h.pods);
    let frs = gce_objects(c, "forwardingRules");
    assert!(
        frs.iter().any(|f| f["IPAddress"] == ip.as_str()),
        "no forwarding rule for {ip}: {frs:?}"
    );
    ip
}

/// `kubectl get cloudloadbalancers -A` shows the Service's row: READY True, the IP, the node count.
pub fn cloudloadbalancer_row(c: &dyn Cluster, svc: &str, ip: &str) {
    let nodes = c.nodes().len().to_string();
    let mut last = String::new();
    wait_for(
        &format!("a Ready CloudLoadBalancer row for {svc} with {ip} and {nodes} nodes"),
        Duration::from_secs(30),
        || {
            last = c.kubectl(&["get", "cloudloadbalancers", "-A"]).ok()?;
            let mut lines = last.lines();
            let header: Vec<&str> = lines.next()?.split_whitespace().collect();
            let col = |n: &str| header.iter().position(|h| *h == n);
            let (name, ipc, nc, ready) = (col("NAME")?, col("IP")?, col("NODES")?, col("READY")?);
            lines
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .find(|r| r.get(name) == Some(&svc))
                .filter(|r| {
                    r.get(ipc) == Some(&ip)
                        && r.get(nc) == Some(&nodes.as_str())
                        && r.get(ready) == Some(&"True")
                })
                .map(|_| ())
        },
    );
    println!("{last}");
}

/// UDP through the ClusterIP (from a node) and through the LB IP (from the client).
pub fn udp(c: &dyn Cluster, h: &Hostnames) {
    let svc = create_svc(
        c,
        "hostnames-udp",
        "hostnames",
        json!({"type": "LoadBalancer", "ports": [{"port": 5353, "targetPort": 9376, "protocol": "UDP"}]}),
    );
    let cip = svc["spec"]["clusterIP"].as_str().unwrap().to_owned();
    let node1 = c.nodes()[0].0.clone();
    let name = wait_for("a UDP answer from the ClusterIP", Duration::from_secs(30), || {
        c.udp(From::Node(&node1), &format!("{cip}:5353"))
    });
    assert!(h.pods.contains(&name), "{name} not one of {:?}", h.pods);
    let ip = lb_ip(c, "hostnames-udp");
    let fr = gce_objects(c, "forwardingRules")
        .into_iter()
        .find(|f| f["IPAddress"] == ip.as_str())
        .unwrap();
    assert_eq!(fr["IPProtocol"], "UDP", "{fr}");
    let name = wait_for("a UDP answer from the LB IP", Duration::from_secs(30), || {
        c.udp(From::Client, &format!("{ip}:5353"))
    });
    assert!(h.pods.contains(&name), "{name} not one of {:?}", h.pods);
}

/// sessionAffinity ClientIP: the pool gets CLIENT_IP and one client keeps getting the same pod, through
/// the ClusterIP and through the LB IP (without affinity, the ClusterIP step saw both pods from node-1).
pub fn session_affinity(c: &dyn Cluster, h: &Hostnames, ip: &str) {
    patch_svc(c, "hostnames", json!({"spec": {"sessionAffinity": "ClientIP"}}));
    let lb = lb_name(c, "hostnames");
    wait_for(
        "the target pool's CLIENT_IP affinity",
        Duration::from_secs(60),
        || {
            gce_objects(c, "targetPools")
                .iter()
                .any(|p| p["name"] == lb.as_str() && p["sessionAffinity"] == "CLIENT_IP")
                .then_some(())
        },
    );
    let node1 = c.nodes()[0].0.clone();
    for (from, url) in [
        (From::Node(&node1), format!("http://{}/", h.cluster_ip)),
        (From::Client, format!("http://{ip}/")),
    ] {
        // Until the proxy applied the affinity, answers may still alternate.
        wait_for("10 answers from one pod", Duration::from_secs(30), || {
            (answers(c, from, &url, 10).len() == 1).then_some(())
        });
        let seen = answers(c, from, &url, 20);
        assert_eq!(seen.len(), 1, "{from:?} -> {url}: {seen:?}");
        assert!(h.pods.contains(seen.first().unwrap()), "{seen:?}");
    }
    patch_svc(c, "hostnames", json!({"spec": {"sessionAffinity": "None"}}));
}

/// loadBalancerSourceRanges = the client's address: the client gets through, the second client (which
/// reaches the unrestricted `hostnames` LB) is dropped; the GCE firewall carries the range.
pub fn source_ranges(c: &dyn Cluster, hostnames_ip: &str) -> String {
    let (inside, _) = c.client_ips();
    create_svc(
        c,
        "ranged",
        "hostnames",
        json!({"type": "LoadBalancer", "loadBalancerSourceRanges": [format!("{inside}/32")],
               "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}),
    );
    let ip = lb_ip(c, "ranged");
    let fw_name = format!("k8s-fw-{}", lb_name(c, "ranged"));
    let fw = gce_objects(c, "firewalls")
        .into_iter()
        .find(|f| f["name"] == fw_name.as_str())
        .unwrap_or_else(|| panic!("no firewall {fw_name}"));
    assert_eq!(fw["sourceRanges"], json!([format!("{inside}/32")]), "{fw}");
    wait_answer(c, From::Client, &format!("http://{ip}/"));
    wait_answer(c, From::Client2, &format!("http://{hostnames_ip}/"));
    let seen = answers(c, From::Client2, &format!("http://{ip}/"), 3);
    assert_eq!(
        seen,
        BTreeSet::from(["<none>".to_string()]),
        "a client outside loadBalancerSourceRanges got through"
    );
    ip
}

/// externalTrafficPolicy Local with one pod: the pool's health check moves to the healthCheckNodePort,
/// the nodes without the pod fail it, and the network sends the LB IP only to the pod's node.
pub fn etp_local(c: &dyn Cluster, ip: &str) {
    patch_svc(
        c,
        "hostnames",
        json!({"spec": {"externalTrafficPolicy": "Local"}}),
    );
    c.scale("hostnames", 1);
    let slices = pod_nodes(c, "hostnames");
    assert_eq!(slices.len(), 1, "{slices:?}");
    let (pod, node) = slices.into_iter().next().unwrap();
    let node_ip = c.nodes().into_iter().find(|n| n.0 == node).map(|n| n.1).unwrap();
    wait_for(
        &format!("the LB IP sent only to {node} ({node_ip})"),
        Duration::from_secs(60),
        || (c.lb_backends(ip) == [node_ip.clone()]).then_some(()),
    );
    let seen = answers(c, From::Client, &format!("http://{ip}/"), 5);
    assert_eq!(seen, BTreeSet::from([pod]), "backends: {:?}", c.lb_backends(ip));
}

/// (pod, node) of each endpoint of `svc`, once the slices list exactly the current pods.
fn pod_nodes(c: &dyn Cluster, svc: &str) -> Vec<(String, String)> {
    wait_for("one endpoint left", Duration::from_secs(30), || {
        let slices = crate::support::api(
            c,
            "GET",
            &format!(
                "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io/service-name={svc}"
            ),
            None,
        );
        let eps: Vec<(String, String)> = slices["items"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
            .map(|e| {
                (
                    e["targetRef"]["name"].as_str().unwrap_or_default().to_owned(),
                    e["nodeName"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        (eps.len() == 1).then_some(eps)
    })
}
