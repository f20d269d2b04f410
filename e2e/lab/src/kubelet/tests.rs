use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use super::*;

#[test]
fn runs_serve_hostname_images_only() {
    assert!(runs_image("gcr.io/google_containers/serve_hostname"));
    assert!(runs_image("registry.k8s.io/serve_hostname:1.4"));
    assert!(runs_image("serve-hostname@sha256:abcd"));
    assert!(!runs_image("nginx"));
    assert!(!runs_image("gcr.io/serve_hostname_not/nginx"));
}

#[test]
fn free_ip_skips_the_bridge_and_used_addresses() {
    let mut used = BTreeSet::new();
    assert_eq!(free_ip("10.64.1.0/24", &used), Some(Ipv4Addr::new(10, 64, 1, 2)));
    used.insert(Ipv4Addr::new(10, 64, 1, 2));
    used.insert(Ipv4Addr::new(10, 64, 1, 3));
    assert_eq!(free_ip("10.64.1.0/24", &used), Some(Ipv4Addr::new(10, 64, 1, 4)));
    // A /30 has two hosts: the bridge and one pod.
    let one: BTreeSet<Ipv4Addr> = [Ipv4Addr::new(10, 0, 0, 2)].into();
    assert_eq!(free_ip("10.0.0.0/30", &one), None);
    assert_eq!(free_ip("not a cidr", &BTreeSet::new()), None);
}

#[test]
fn pick_node_spreads_and_breaks_ties_in_order() {
    let mut load = BTreeMap::new();
    assert_eq!(pick_node(&["node-1", "node-2"], &load), Some("node-1"));
    load.insert("node-1".to_owned(), 1);
    assert_eq!(pick_node(&["node-1", "node-2"], &load), Some("node-2"));
    load.insert("node-2".to_owned(), 1);
    assert_eq!(pick_node(&["node-1", "node-2"], &load), Some("node-1"));
    assert_eq!(pick_node(&[], &load), None);
}

#[test]
fn running_status_reads_as_ready_and_running() {
    let p = RunningPod {
        uid: "u".into(),
        namespace: "default".into(),
        name: "hostnames-1".into(),
        app: "hostnames".into(),
        node: "node-1".into(),
        netns: "lab-pod-u".into(),
        link: "pu".into(),
        ip: Ipv4Addr::new(10, 64, 0, 2),
        ip6: Some("fd00:10:64::2".parse().unwrap()),
        port: 9376,
        terminating: false,
        server: None,
    };
    let st = running_status(
        &p,
        "serve-hostname",
        "serve_hostname",
        "10.128.0.2",
        "2026-01-01T00:00:00Z",
    );
    assert_eq!(st["phase"], "Running");
    assert_eq!(st["podIP"], "10.64.0.2");
    assert_eq!(
        st["podIPs"],
        json!([{"ip": "10.64.0.2"}, {"ip": "fd00:10:64::2"}])
    );
    assert_eq!(st["hostIP"], "10.128.0.2");
    let ready = st["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    assert_eq!(ready["status"], "True");
    assert_eq!(st["containerStatuses"][0]["ready"], true);
    assert_eq!(st["containerStatuses"][0]["restartCount"], 0);
}

#[test]
fn pod_ip6_mirrors_the_ipv4_offset_in_the_ipv6_pod_cidr() {
    let node = Node {
        pod_cidr: "10.64.1.0/24".into(),
        pod_cidr6: "fd00:10:64:1::/64".into(),
        ..Node::default()
    };
    assert_eq!(node.bridge_ip6(), Some("fd00:10:64:1::1".parse().unwrap()));
    assert_eq!(
        node.pod_ip6_of(Ipv4Addr::new(10, 64, 1, 7)),
        Some("fd00:10:64:1::7".parse().unwrap())
    );
    // Outside the IPv4 pod CIDR, or no IPv6 pod CIDR: none.
    assert_eq!(node.pod_ip6_of(Ipv4Addr::new(10, 64, 0, 7)), None);
    assert_eq!(node.pod_ip6_of(Ipv4Addr::new(10, 64, 2, 7)), None);
    let v4_only = Node {
        pod_cidr6: String::new(),
        ..node
    };
    assert_eq!(v4_only.pod_ip6_of(Ipv4Addr::new(10, 64, 1, 7)), None);
}
