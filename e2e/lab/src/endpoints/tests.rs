use serde_json::{Value, json};

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

fn hostnames_svc() -> serde_json::Value {
    json!({
        "metadata": {"name": "hostnames", "labels": {"app": "hostnames"}},
        "spec": {"selector": {"app": "hostnames"}, "clusterIP": "10.79.255.4",
                 "ports": [{"name": "80-9376", "port": 80, "targetPort": 9376, "protocol": "TCP"}]}
    })
}

#[test]
fn endpoints_list_ready_pods_by_ip_text_with_target_ports_and_service_labels() {
    let pods = [
        pod("hostnames-1", "hostnames", "10.76.0.9", "node-1"),
        pod("other-2", "other", "10.76.0.8", "node-1"),
        pod("hostnames-3", "hostnames", "10.76.0.10", "node-2"),
    ];
    let ep = super::endpoints(&hostnames_svc(), &pods).expect("endpoints");
    assert_eq!(ep["kind"], "Endpoints");
    assert_eq!(ep["metadata"]["name"], "hostnames");
    assert_eq!(ep["metadata"]["labels"], json!({"app": "hostnames"}));
    // Sorted as text, as upstream repacks them: 10.76.0.10 before 10.76.0.9.
    assert_eq!(
        ep["subsets"],
        json!([{
            "addresses": [
                {"ip": "10.76.0.10", "nodeName": "node-2",
                 "targetRef": {"kind": "Pod", "namespace": "default", "name": "hostnames-3"}},
                {"ip": "10.76.0.9", "nodeName": "node-1",
                 "targetRef": {"kind": "Pod", "namespace": "default", "name": "hostnames-1"}}
            ],
            "ports": [{"name": "80-9376", "port": 9376, "protocol": "TCP"}]
        }])
    );
}

#[test]
fn endpoints_leave_terminating_pods_out_unless_not_ready_addresses_are_published() {
    let mut going = pod("hostnames-2", "hostnames", "10.76.0.10", "node-2");
    going.terminating = true;
    let pods = [pod("hostnames-1", "hostnames", "10.76.0.9", "node-1"), going];
    let ep = super::endpoints(&hostnames_svc(), &pods).expect("endpoints");
    let ips: Vec<&Value> = ep["subsets"][0]["addresses"]
        .as_array()
        .expect("addresses")
        .iter()
        .map(|a| &a["ip"])
        .collect();
    assert_eq!(ips, [&json!("10.76.0.9")]);
    assert!(ep["subsets"][0].get("notReadyAddresses").is_none(), "{ep}");
    let mut publish = hostnames_svc();
    publish["spec"]["publishNotReadyAddresses"] = json!(true);
    let ep = super::endpoints(&publish, &pods).expect("endpoints");
    assert_eq!(ep["subsets"][0]["addresses"].as_array().map(Vec::len), Some(2));
}

#[test]
fn endpoints_without_pods_have_no_subsets_and_unnamed_ports_no_name() {
    let svc = json!({"metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
    let ep = super::endpoints(&svc, &[]).expect("endpoints");
    assert!(
        ep.get("subsets").is_none() && ep["metadata"].get("labels").is_none(),
        "{ep}"
    );
    let ep = super::endpoints(&svc, &[pod("web-1", "web", "10.64.1.10", "node-1")]).expect("endpoints");
    assert_eq!(
        ep["subsets"][0]["ports"],
        json!([{"port": 80, "protocol": "TCP"}])
    );
    // Headless without ports: addresses only; a ClusterIP Service without ports: nothing.
    let headless = json!({"metadata": {"name": "h"},
        "spec": {"selector": {"app": "web"}, "clusterIP": "None"}});
    let pods = [pod("web-1", "web", "10.64.1.10", "node-1")];
    let ep = super::endpoints(&headless, &pods).expect("endpoints");
    assert!(
        ep["subsets"][0].get("ports").is_none() && ep["subsets"][0]["addresses"][0]["ip"] == "10.64.1.10"
    );
    let mut portless = headless.clone();
    portless["spec"]["clusterIP"] = json!("10.0.0.1");
    assert!(
        super::endpoints(&portless, &pods)
            .expect("endpoints")
            .get("subsets")
            .is_none()
    );
    // No selector: user-managed, not ours.
    assert!(super::endpoints(&json!({"metadata": {"name": "x"}, "spec": {}}), &pods).is_none());
}

#[test]
fn endpoints_are_rewritten_only_on_change_and_orphans_are_the_ones_without_a_service() {
    let pods = [pod("hostnames-1", "hostnames", "10.76.0.9", "node-1")];
    let want = super::endpoints(&hostnames_svc(), &pods).expect("endpoints");
    let mut stored = want.clone();
    stored["metadata"]["uid"] = json!("u1");
    stored["metadata"]["resourceVersion"] = json!("9");
    assert!(super::same_endpoints(&stored, &want));
    let fewer = super::endpoints(&hostnames_svc(), &[]).expect("endpoints");
    assert!(!super::same_endpoints(&stored, &fewer));
    let mut leader = json!({"metadata": {"name": "old-lock",
        "annotations": {"control-plane.alpha.kubernetes.io/leader": "{}"}}});
    leader["subsets"] = json!([]);
    let have = [stored, json!({"metadata": {"name": "deleted-svc"}}), leader];
    assert_eq!(super::orphans(&have, &[hostnames_svc()]), ["deleted-svc"]);
}
