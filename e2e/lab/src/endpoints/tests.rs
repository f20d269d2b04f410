use serde_json::json;

use super::slice;
use crate::state::Pod;

fn pod(name: &str, app: &str, ip: &str, node: &str) -> Pod {
    Pod {
        name: name.into(),
        app: app.into(),
        ip: ip.into(),
        node: node.into(),
        ..Pod::default()
    }
}

#[test]
fn slice_lists_matching_pods_with_target_ports_and_service_labels() {
    let svc = json!({
        "metadata": {"name": "hostnames", "labels": {"app": "hostnames"}},
        "spec": {"selector": {"app": "hostnames"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 9376, "protocol": "TCP"}]}
    });
    let pods = [
        pod("hostnames-1", "hostnames", "10.64.1.10", "node-1"),
        pod("other-2", "other", "10.64.2.11", "node-2"),
        pod("hostnames-3", "hostnames", "10.64.2.12", "node-2"),
    ];
    let s = slice(&svc, &pods).expect("a slice");
    assert_eq!(s["metadata"]["name"], "hostnames-lab");
    assert_eq!(s["metadata"]["labels"]["kubernetes.io/service-name"], "hostnames");
    assert_eq!(s["metadata"]["labels"]["app"], "hostnames");
    let ips: Vec<&str> = s["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .map(|e| e["addresses"][0].as_str().expect("ip"))
        .collect();
    assert_eq!(ips, ["10.64.1.10", "10.64.2.12"]);
    assert_eq!(s["endpoints"][1]["nodeName"], "node-2");
    assert_eq!(
        s["ports"],
        json!([{"name": "http", "port": 9376, "protocol": "TCP"}])
    );
}

#[test]
fn no_slice_without_selector_and_none_matching_a_foreign_label() {
    let pods = [pod("a-1", "a", "10.64.1.10", "node-1")];
    let no_selector = json!({"metadata": {"name": "x"}, "spec": {"ports": [{"port": 80}]}});
    assert!(slice(&no_selector, &pods).is_none());
    let other_key = json!({"metadata": {"name": "y"},
        "spec": {"selector": {"tier": "a"}, "ports": [{"port": 80}]}});
    let s = slice(&other_key, &pods).expect("a slice");
    assert_eq!(s["endpoints"], json!([]));
    // Without targetPort the port itself is the target.
    assert_eq!(s["ports"][0]["port"], 80);
}

#[test]
fn a_pod_being_deleted_is_a_terminating_endpoint_that_still_serves() {
    let svc = json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}
    });
    let mut going = pod("web-2", "web", "10.64.2.11", "node-2");
    going.terminating = true;
    let s = slice(&svc, &[pod("web-1", "web", "10.64.1.10", "node-1"), going]).expect("a slice");
    assert_eq!(
        s["endpoints"][0]["conditions"],
        json!({"ready": true, "serving": true, "terminating": false})
    );
    assert_eq!(
        s["endpoints"][1]["conditions"],
        json!({"ready": false, "serving": true, "terminating": true})
    );
}
