//! The real `svcnet-proxy run` in a throwaway one-node cluster (see `lab/mod.rs`): real netfilter,
//! real traffic between network namespaces, the API stand-in as the control plane.

mod lab;

use std::time::Duration;

use lab::api::{cluster_ip, local, node_port};
use lab::helper::{answered_by, request};
use lab::{Lab, NODE_IP, Opts, wait_for};
use serde_json::json;

/// Not a test: the pod servers and clients of the lab run this binary with `SVCNET_HELPER` set.
#[test]
#[ignore = "helper process for the lab, started by the other tests"]
fn helper() {
    lab::helper::main();
}

const TCP: &[(&str, &str)] = &[("", "TCP")];

fn web_spec() -> serde_json::Value {
    json!({"ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]})
}

#[test]
fn clusterip_nodeport_and_no_endpoints() {
    let Some(lab) = Lab::start("basic", Opts::default()) else {
        return;
    };
    let api = lab.api();
    let web = api.service("web", web_spec());
    api.slice("web", TCP, &[local("10.244.1.10"), local("10.244.1.11")]);
    let np = api.service(
        "np",
        json!({"type": "NodePort", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    api.slice("np", TCP, &[local("10.244.1.10")]);
    let empty = api.service("empty", web_spec());
    let web_addr = format!("{}:80", cluster_ip(&web));

    // ClusterIP from a pod: both endpoints answer (random load balancing).
    let pod1 = &lab.pod("pod1").ns;
    let seen = wait_for("both web endpoints from pod1", Duration::from_secs(20), || {
        let s = answered_by(&request(pod1, "tcp", &web_addr, 12, None));
        (s.len() == 2).then_some(s)
    });
    assert_eq!(seen, ["pod1", "pod2"].map(String::from).into());

    // ClusterIP from the node itself (nat OUTPUT).
    let from_node = request(&lab.node, "tcp", &web_addr, 4, None);
    assert!(from_node.iter().all(|r| !r.starts_with("ERR")), "{from_node:?}");
    assert!(!answered_by(&from_node).is_empty(), "{from_node:?}");

    // NodePort from the client: answered, and masqueraded (the pod sees the node's bridge address).
    let np_addr = format!("{NODE_IP}:{}", node_port(&np));
    let r = request(&lab.client, "tcp", &np_addr, 3, None);
    assert!(r.iter().all(|r| r == "pod1 10.244.1.1"), "{r:?}");

    // A service without endpoints rejects: connection refused, not a timeout.
    let r = request(pod1, "tcp", &format!("{}:80", cluster_ip(&empty)), 1, None);
    assert!(r[0].starts_with("ERR refused"), "{r:?}");
    let r = request(&lab.node, "tcp", &format!("{}:80", cluster_ip(&empty)), 1, None);
    assert!(r[0].starts_with("ERR refused"), "{r:?}");

    // /healthz says healthy with an eligible node.
    let hz = lab.node.ok(&[
        "curl",
        "-sS",
        "-w",
        "\n%{http_code}",
        "http://127.0.0.1:10256/healthz",
    ]);
    assert!(hz.ends_with("\n200"), "{hz}");
    assert!(hz.contains("\"nodeEligible\":true"), "{hz}");
}
