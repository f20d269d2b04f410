//! The control plane inside a network namespace at a lab address, as the lab's `vpc` namespace will
//! hold it: reachable there, serving the `kubernetes` Service's endpoint at that address (the lease
//! endpoint reconciler runs once the address is not loopback). Needs root (SKIPPED outside CI).
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr};

use svcnet_testcluster::{Cluster, Options};

#[test]
fn control_plane_runs_inside_a_namespace_on_a_lab_address() {
    svcnet_netns::sweep_dead();
    let Some(ns) = svcnet_netns::netns_or_skip("k8s") else {
        return;
    };
    let ip = IpAddr::V4(Ipv4Addr::new(10, 128, 0, 1));
    // The namespace has only lo: the lab address goes there (nothing is linked to the root namespace).
    ns.ok(&["ip", "addr", "add", "10.128.0.1/32", "dev", "lo"]);
    let cluster = Cluster::start_with(Options {
        netns: Some(ns.name().to_owned()),
        ip: Some(ip),
        ..Options::default()
    })
    .unwrap();
    assert_eq!(cluster.server(), "https://10.128.0.1:6443");
    let v: serde_json::Value =
        serde_json::from_str(&cluster.kubectl_ok(&["version", "-o", "json"]).unwrap()).unwrap();
    assert_eq!(v["serverVersion"]["gitVersion"], "v1.34.12", "{v}");
    let eps = cluster
        .kubectl_ok(&[
            "get",
            "endpointslices",
            "-n",
            "default",
            "-l",
            "kubernetes.io/service-name=kubernetes",
            "-o",
            "jsonpath={.items[*].endpoints[*].addresses[*]}",
        ])
        .unwrap();
    assert_eq!(eps.trim(), "10.128.0.1", "{}", cluster.log_tails(10));
    // Every process runs inside the namespace.
    let inside = svcnet_netns::run(&["ip", "netns", "pids", ns.name()], None)
        .unwrap()
        .stdout;
    for pid in cluster.pids() {
        assert!(
            inside.split_whitespace().any(|p| p == pid.to_string()),
            "pid {pid} is not in {}",
            ns.name()
        );
    }
    drop(cluster);
}
