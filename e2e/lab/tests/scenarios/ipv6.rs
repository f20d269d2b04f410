//! IPv6 load balancers through the lab's GCE network, built by an operator with the real gcloud
//! against the fake GCE (svcnet's controller does not create IPv6 objects yet): dual-stack
//! subnetworks, an instance group of the nodes, a regional health check, an EXTERNAL and an
//! INTERNAL regional backend service, IPv4 and IPv6 forwarding rules on them and their firewalls.
//! The Services carry a `loadBalancerClass` no controller of the cluster serves, so the operator
//! writes their ingress IPs; the proxy takes the packets with its LB-ingress rules of each family.
//! Each step removes what it made (the leak check after it finds nothing).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::families::{bare, gcloud, lb_service, routed_to_every_node, url};
use super::{pod_names, svc_path, wait_all_answer};
use crate::support::{self, Cluster, From, wait_for};

const WAIT: Duration = Duration::from_secs(60);
const APP: &str = "web6";
/// A class no controller of the lab serves: svcnet's controller leaves such Services alone.
const CLASS: &str = "example.com/operator-made";
const REGION: &str = "us-central1";
const ZONE: &str = "us-central1-b";
const NODE_TAG: &str = "svcnet-lab-node";
const HC_PORT: &str = "10256";
/// The lab's VPC IPv6 range (nodes and the `vm`): the internal rule's firewall source.
const VPC_RANGE6: &str = "fd20:128::/64";
const EXT_SUBNET: &str = "lab-ipv6-ext";
const INT_SUBNET: &str = "lab-ipv6-int";
const GROUP: &str = "lab-ipv6";
const HC: &str = "lab-ipv6";
const EXT_BS: &str = "lab-ipv6-ext";
const INT_BS: &str = "lab-ipv6-int";

fn regional<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(["--region", REGION]);
    v
}

/// A forwarding rule as gcloud describes it.
fn describe_rule(c: &dyn Cluster, name: &str) -> Value {
    let out = gcloud(
        c,
        &regional(&["compute", "forwarding-rules", "describe", name, "--format=json"]),
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("gcloud describe {name}: {e}: {out}"))
}

/// What the operator shares between the LBs: the dual-stack subnetworks (one per IPv6 access
/// type: GCE gives a subnetwork one), an instance group of every node, a regional HTTP check on
/// the proxies' healthz, an EXTERNAL and an INTERNAL backend service over the group.
fn shared_objects(c: &dyn Cluster) {
    for (subnet, range, access) in [
        (EXT_SUBNET, "10.129.0.0/24", "EXTERNAL"),
        (INT_SUBNET, "10.129.1.0/24", "INTERNAL"),
    ] {
        let args = [
            "compute",
            "networks",
            "subnets",
            "create",
            subnet,
            "--network",
            "default",
            "--range",
            range,
            "--stack-type",
            "IPV4_IPV6",
            "--ipv6-access-type",
            access,
        ];
        gcloud(c, &regional(&args));
    }
    gcloud(
        c,
        &[
            "compute",
            "instance-groups",
            "unmanaged",
            "create",
            GROUP,
            "--zone",
            ZONE,
        ],
    );
    let nodes: Vec<String> = c.nodes().into_iter().map(|n| n.0).collect();
    let instances = nodes.join(",");
    gcloud(
        c,
        &[
            "compute",
            "instance-groups",
            "unmanaged",
            "add-instances",
            GROUP,
            "--zone",
            ZONE,
            "--instances",
            &instances,
        ],
    );
    let hc = [
        "compute",
        "health-checks",
        "create",
        "http",
        HC,
        "--port",
        HC_PORT,
        "--request-path",
        "/healthz",
    ];
    gcloud(c, &regional(&hc));
    for (bs, scheme) in [(EXT_BS, "EXTERNAL"), (INT_BS, "INTERNAL")] {
        let create = [
            "compute",
            "backend-services",
            "create",
            bs,
            "--load-balancing-scheme",
            scheme,
            "--protocol",
            "TCP",
            "--health-checks",
            HC,
            "--health-checks-region",
            REGION,
        ];
        gcloud(c, &regional(&create));
        let add = [
            "compute",
            "backend-services",
            "add-backend",
            bs,
            "--instance-group",
            GROUP,
            "--instance-group-zone",
            ZONE,
        ];
        gcloud(c, &regional(&add));
    }
}

/// A forwarding rule for TCP 80 on `bs`; `v6`: an IPv6 one on `subnet`. Returns its `IPAddress`
/// (an IPv6 rule's is `ADDR/96`).
fn rule(c: &dyn Cluster, name: &str, scheme: &str, bs: &str, v6: Option<&str>) -> String {
    let mut args = vec![
        "compute",
        "forwarding-rules",
        "create",
        name,
        "--load-balancing-scheme",
        scheme,
        "--backend-service",
        bs,
        "--ports",
        "80",
        "--ip-protocol",
        "TCP",
    ];
    if scheme == "INTERNAL" {
        args.extend(["--network", "default"]);
    }
    if let Some(subnet) = v6 {
        args.extend(["--ip-version", "IPV6", "--subnet", subnet]);
    }
    gcloud(c, &regional(&args));
    let fr = describe_rule(c, name);
    assert_eq!(fr["loadBalancingScheme"], scheme, "{fr}");
    assert!(
        fr["backendService"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/{bs}")),
        "{fr}"
    );
    if v6.is_some() {
        assert_eq!(fr["ipVersion"], "IPV6", "{fr}");
    }
    fr["IPAddress"].as_str().unwrap().to_owned()
}

/// A firewall allowing TCP 80 from `source` to `dest` on the nodes.
fn firewall(c: &dyn Cluster, name: &str, source: &str, dest: &str) {
    gcloud(
        c,
        &[
            "compute",
            "firewall-rules",
            "create",
            name,
            "--network",
            "default",
            "--allow",
            "tcp:80",
            "--source-ranges",
            source,
            "--destination-ranges",
            dest,
            "--target-tags",
            NODE_TAG,
        ],
    );
}

/// A LoadBalancer Service of the operator's class over the app's pods, with `families`; then its
/// status as the operator writes it: `ingress` (bare addresses).
fn operator_service(c: &dyn Cluster, name: &str, families: &[&str], ingress: &[&str]) {
    lb_service(c, name, APP, families, Value::Null, Some(CLASS));
    let ingress: Vec<Value> = ingress
        .iter()
        .map(|ip| json!({"ip": bare(ip), "ipMode": "VIP"}))
        .collect();
    support::api(
        c,
        "PATCH",
        &format!("{}/status", svc_path(name)),
        Some(&json!({"status": {"loadBalancer": {"ingress": ingress}}})),
    );
}

/// The pods' IPv6 addresses as the Service's IPv6 EndpointSlice lists them, once it lists `n`.
fn ipv6_endpoints(c: &dyn Cluster, svc: &str, n: usize) -> BTreeSet<String> {
    let path = format!(
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io/service-name={svc}"
    );
    wait_for(&format!("{n} IPv6 endpoints of {svc}"), WAIT, || {
        let slices = c.api("GET", &path, None).ok()?;
        let ips: BTreeSet<String> = slices["items"]
            .as_array()?
            .iter()
            .filter(|s| s["addressType"] == "IPv6")
            .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
            .filter_map(|e| e["addresses"][0].as_str().map(str::to_owned))
            .collect();
        (ips.len() == n).then_some(ips)
    })
}

/// (a) A dual-stack Service behind an EXTERNAL IPv4 and an EXTERNAL IPv6 rule on one backend
/// service: the client reaches both pods over each family, and every answer names a pod.
pub fn dual_stack_by_gcloud(c: &dyn Cluster) {
    c.run_pods(APP, 2, 9376);
    shared_objects(c);
    let v4 = rule(c, "lab-dual-v4", "EXTERNAL", EXT_BS, None);
    let v6 = rule(c, "lab-dual-v6", "EXTERNAL", EXT_BS, Some(EXT_SUBNET));
    assert!(v6.ends_with("/96"), "an IPv6 rule holds a /96: {v6}");
    firewall(c, "lab-dual-v4", "0.0.0.0/0", &v4);
    operator_service(c, "dual-op", &["IPv4", "IPv6"], &[&v4, &v6]);
    let svc = support::api(c, "GET", &svc_path("dual-op"), None);
    assert_eq!(svc["spec"]["clusterIPs"].as_array().unwrap().len(), 2, "{svc}");
    assert!(
        svc["metadata"]["finalizers"].is_null(),
        "svcnet's controller must leave another class's Service alone: {svc}"
    );
    let pods = pod_names(c, "dual-op");
    assert_eq!(pods.len(), 2, "{pods:?}");
    ipv6_endpoints(c, "dual-op", 2);
    routed_to_every_node(c, &v4);
    routed_to_every_node(c, &v6);
    wait_all_answer(c, From::Client, &url(&v4), 2);
    // The IPv4 firewall opens nothing for IPv6: the client is dropped until the IPv6 one exists.
    assert_eq!(
        c.get(From::Client, &url(&v6)),
        None,
        "IPv6 through an IPv4-only firewall"
    );
    firewall(c, "lab-dual-v6", "::/0", bare(&v6));
    for ip in [&v4, &v6] {
        let seen = wait_all_answer(c, From::Client, &url(ip), 2);
        assert_eq!(seen, pods, "answers through {ip} are the pods");
    }
}

/// (b) An IPv6-only Service behind an EXTERNAL IPv6 rule (the client reaches it over IPv6) and an
/// IPv6-only one behind an INTERNAL IPv6 rule (the VPC's VM reaches it, the client does not).
/// Then everything the operator made is deleted and the VPC's IPv6 routes go.
pub fn ipv6_only_by_gcloud(c: &dyn Cluster) {
    let ext = rule(c, "lab-v6only", "EXTERNAL", EXT_BS, Some(EXT_SUBNET));
    firewall(c, "lab-v6only", "::/0", bare(&ext));
    operator_service(c, "v6only-op", &["IPv6"], &[&ext]);
    let svc = support::api(c, "GET", &svc_path("v6only-op"), None);
    let cluster_ips: Vec<&str> = svc["spec"]["clusterIPs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(cluster_ips.len() == 1 && cluster_ips[0].contains(':'), "{svc}");
    let pods = pod_names(c, "v6only-op");
    ipv6_endpoints(c, "v6only-op", 2);
    routed_to_every_node(c, &ext);
    assert_eq!(wait_all_answer(c, From::Client, &url(&ext), 2), pods);

    let int = rule(c, "lab-v6int", "INTERNAL", INT_BS, Some(INT_SUBNET));
    firewall(c, "lab-v6int", VPC_RANGE6, bare(&int));
    operator_service(c, "v6int-op", &["IPv6"], &[&int]);
    routed_to_every_node(c, &int);
    assert_eq!(wait_all_answer(c, From::Vm, &url(&int), 2), pods);
    assert_eq!(
        c.get(From::Client, &url(&int)),
        None,
        "the internet has no way to an internal IPv6 address"
    );
    teardown(c);
}

/// Deletes the Services, the Deployment and every GCE object the steps made (rules before their
/// backend services, as GCE requires), then waits for the VPC's routes of every rule to go.
fn teardown(c: &dyn Cluster) {
    let rules = ["lab-dual-v4", "lab-dual-v6", "lab-v6only", "lab-v6int"];
    let ips: Vec<String> = rules
        .iter()
        .map(|r| describe_rule(c, r)["IPAddress"].as_str().unwrap().to_owned())
        .collect();
    for svc in ["dual-op", "v6only-op", "v6int-op"] {
        support::api(c, "DELETE", &svc_path(svc), None);
    }
    c.kubectl(&["delete", "deployment", APP]).unwrap();
    for fr in rules {
        gcloud(
            c,
            &regional(&["compute", "forwarding-rules", "delete", fr, "--quiet"]),
        );
    }
    for fw in ["lab-dual-v4", "lab-dual-v6", "lab-v6only", "lab-v6int"] {
        gcloud(c, &["compute", "firewall-rules", "delete", fw, "--quiet"]);
    }
    for bs in [EXT_BS, INT_BS] {
        gcloud(
            c,
            &regional(&["compute", "backend-services", "delete", bs, "--quiet"]),
        );
    }
    gcloud(
        c,
        &regional(&["compute", "health-checks", "delete", HC, "--quiet"]),
    );
    gcloud(
        c,
        &[
            "compute",
            "instance-groups",
            "unmanaged",
            "delete",
            GROUP,
            "--zone",
            ZONE,
            "--quiet",
        ],
    );
    for subnet in [EXT_SUBNET, INT_SUBNET] {
        gcloud(
            c,
            &regional(&["compute", "networks", "subnets", "delete", subnet, "--quiet"]),
        );
    }
    for ip in &ips {
        wait_for(&format!("the VPC's route for {ip} gone"), WAIT, || {
            c.lb_route(ip).trim().is_empty().then_some(())
        });
    }
}
