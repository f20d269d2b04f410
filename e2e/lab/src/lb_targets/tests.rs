use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Hop, InternalRule, dest, hops, internal_rules, is_ipv6, targets};

const P: &str = "https://compute.googleapis.com/compute/v1/projects/p";

fn inst() -> BTreeMap<String, Hop> {
    BTreeMap::from([
        ("node-1".to_owned(), ("10.128.0.2".to_owned(), "n1".to_owned())),
        ("node-2".to_owned(), ("10.128.0.3".to_owned(), "n2".to_owned())),
        ("node-3".to_owned(), ("10.128.0.4".to_owned(), "n3".to_owned())),
    ])
}

fn hop(i: u32) -> Hop {
    (format!("10.128.0.{}", i + 1), format!("n{i}"))
}

/// An internal LB as the controller builds it: group with node-1 and node-2 (node-3 is not a
/// member), backend service over the group, shared node check, INTERNAL rule on port 80.
fn internal_state() -> Value {
    let z = format!("{P}/zones/us-central1-b");
    json!({
        "instanceGroups": [{
            "name": "k8s-ig--c1", "selfLink": format!("{z}/instanceGroups/k8s-ig--c1"),
            "_members": [format!("{z}/instances/node-1"), format!("{z}/instances/node-2")]
        }],
        "healthChecks": [{
            "name": "k8s-c1-node", "selfLink": format!("{P}/global/healthChecks/k8s-c1-node"),
            "type": "HTTP", "timeoutSec": 1, "checkIntervalSec": 8, "healthyThreshold": 1,
            "unhealthyThreshold": 3, "httpHealthCheck": {"port": 10256, "requestPath": "/healthz"}
        }],
        // A legacy check of the same name (the external LBs' one) must stay a separate check.
        "httpHealthChecks": [{"name": "k8s-c1-node", "port": 9999, "requestPath": "/legacy"}],
        "backendServices": [{
            "name": "ailb", "selfLink": format!("{P}/regions/us-central1/backendServices/ailb"),
            "loadBalancingScheme": "INTERNAL",
            "backends": [{"group": format!("{z}/instanceGroups/k8s-ig--c1")}],
            "healthChecks": [format!("{P}/global/healthChecks/k8s-c1-node")]
        }],
        "forwardingRules": [{
            "name": "ailb", "IPAddress": "10.128.0.5", "IPProtocol": "TCP",
            "loadBalancingScheme": "INTERNAL", "ports": ["80"],
            "backendService": format!("{P}/regions/us-central1/backendServices/ailb")
        }]
    })
}

#[test]
fn internal_rule_goes_to_the_backend_services_group_members_with_its_check() {
    let t = targets(&internal_state(), &inst());
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!(t[0].ip, "10.128.0.5");
    assert_eq!(t[0].members, vec![hop(1), hop(2)], "node-3 is no group member");
    assert_eq!(t[0].checks.len(), 1);
    let hc = &t[0].checks[0];
    assert_eq!(hc["name"], "healthChecks/k8s-c1-node");
    assert_eq!(
        hc["port"], 10256,
        "port read from httpHealthCheck, not the legacy check"
    );
    assert_eq!(hc["requestPath"], "/healthz");
    assert_eq!(hc["unhealthyThreshold"], 3);
    assert_eq!(
        hc["checkIntervalSec"], 8,
        "the checker needs GCE's probe interval"
    );
}

#[test]
fn only_healthy_members_get_the_ip_and_every_member_is_probed() {
    let t = &targets(&internal_state(), &inst())[0];
    let mut probed = Vec::new();
    let h = hops(t, |ip, hc| {
        probed.push((ip.to_owned(), hc["port"].as_u64().unwrap_or_default()));
        ip == "10.128.0.3"
    });
    assert_eq!(h, vec![hop(2)]);
    assert_eq!(
        probed,
        vec![("10.128.0.2".to_owned(), 10256), ("10.128.0.3".to_owned(), 10256)]
    );
    // None healthy: GCE spreads over all members.
    assert_eq!(hops(t, |_, _| false), vec![hop(1), hop(2)]);
}

#[test]
fn internal_rule_without_its_backend_service_or_group_delivers_nowhere() {
    let mut gce = internal_state();
    gce["backendServices"] = json!([]);
    assert!(targets(&gce, &inst()).is_empty());
    let mut gce = internal_state();
    gce["instanceGroups"] = json!([]);
    let t = targets(&gce, &inst());
    assert!(t[0].members.is_empty(), "{t:?}");
}

#[test]
fn external_rule_goes_to_its_pool_with_the_legacy_check() {
    let gce = json!({
        "targetPools": [{"name": "a1", "selfLink": format!("{P}/regions/r/targetPools/a1"),
            "instances": [format!("{P}/zones/z/instances/node-3")],
            "healthChecks": [format!("{P}/global/httpHealthChecks/k8s-c1-node")]}],
        "httpHealthChecks": [{"name": "k8s-c1-node", "port": 10256, "requestPath": "/healthz"}],
        "forwardingRules": [{"name": "a1", "IPAddress": "203.0.113.1", "IPProtocol": "TCP",
            "portRange": "80-80", "target": format!("{P}/regions/r/targetPools/a1")}]
    });
    let t = targets(&gce, &inst());
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].members, vec![hop(3)]);
    assert_eq!(t[0].checks[0]["name"], "httpHealthChecks/k8s-c1-node");
    assert_eq!(t[0].checks[0]["port"], 10256);
    assert!(
        internal_rules(&gce).is_empty(),
        "an external rule is not internal"
    );
}

#[test]
fn ipv6_rules_deliver_their_96_to_the_same_members() {
    let mut gce = internal_state();
    gce["forwardingRules"].as_array_mut().unwrap().push(json!({
        "name": "ailb-ipv6", "IPAddress": "fd20:0:1::1:0:0/96", "IPProtocol": "TCP",
        "ipVersion": "IPV6", "loadBalancingScheme": "INTERNAL", "ports": ["80"],
        "backendService": format!("{P}/regions/us-central1/backendServices/ailb")
    }));
    let t = targets(&gce, &inst());
    assert_eq!(t.len(), 2, "{t:?}");
    let v6 = t.iter().find(|t| is_ipv6(&t.ip)).unwrap();
    let v4 = t.iter().find(|t| !is_ipv6(&t.ip)).unwrap();
    assert_eq!(v6.ip, "fd20:0:1::1:0:0/96");
    assert_eq!(dest(&v6.ip), "fd20:0:1::1:0:0/96");
    assert_eq!(dest(&v4.ip), "10.128.0.5/32");
    assert_eq!(v6.members, v4.members);
    assert_eq!(v6.checks, v4.checks);
    let names: Vec<String> = internal_rules(&gce).into_iter().map(|r| r.name).collect();
    assert_eq!(names, ["ailb", "ailb-ipv6"]);
}

#[test]
fn dest_is_a_cidr_of_the_address_family() {
    assert_eq!(dest("203.0.113.7"), "203.0.113.7/32");
    assert_eq!(dest("2001:db8:4000::1:0:0"), "2001:db8:4000::1:0:0/128");
    assert_eq!(dest("2001:db8:4000::1:0:0/96"), "2001:db8:4000::1:0:0/96");
}

#[test]
fn internal_rules_carry_protocol_and_ports() {
    let mut gce = internal_state();
    gce["forwardingRules"].as_array_mut().unwrap().push(
        json!({"name": "aall", "IPAddress": "10.128.0.6", "IPProtocol": "UDP",
            "loadBalancingScheme": "INTERNAL", "allPorts": true}),
    );
    assert_eq!(
        internal_rules(&gce),
        vec![
            InternalRule {
                name: "aall".into(),
                ip: "10.128.0.6".into(),
                protocol: Some("udp".into()),
                ports: vec![],
            },
            InternalRule {
                name: "ailb".into(),
                ip: "10.128.0.5".into(),
                protocol: Some("tcp".into()),
                ports: vec!["80".into()],
            },
        ]
    );
}

/// A backend-service network LB as GKE's controller builds it: an EXTERNAL rule pointing at an
/// EXTERNAL backend service over the shared group, judged by a regional check (a global check of
/// the same name, here on another port, is a different object and must not be used).
#[test]
fn external_rule_with_a_backend_service_goes_to_its_groups_with_the_regional_check() {
    let z = format!("{P}/zones/us-central1-b");
    let hc = "k8s2-7kpbhpki-l4-shared-hc";
    let gce = json!({
        "instanceGroups": [{
            "name": "k8s-ig--c1", "selfLink": format!("{z}/instanceGroups/k8s-ig--c1"),
            "_members": [format!("{z}/instances/node-2"), format!("{z}/instances/node-3")]
        }],
        "regionHealthChecks": [{
            "name": hc, "selfLink": format!("{P}/regions/us-central1/healthChecks/{hc}"),
            "type": "HTTP", "timeoutSec": 1, "healthyThreshold": 1, "unhealthyThreshold": 3,
            "httpHealthCheck": {"port": 10256, "requestPath": "/healthz"}
        }],
        "healthChecks": [{
            "name": hc, "selfLink": format!("{P}/global/healthChecks/{hc}"),
            "type": "HTTP", "httpHealthCheck": {"port": 7777, "requestPath": "/other"}
        }],
        "backendServices": [{
            "name": "k8s2-bs", "selfLink": format!("{P}/regions/us-central1/backendServices/k8s2-bs"),
            "loadBalancingScheme": "EXTERNAL",
            "backends": [{"group": format!("{z}/instanceGroups/k8s-ig--c1")}],
            "healthChecks": [format!("{P}/regions/us-central1/healthChecks/{hc}")]
        }],
        "forwardingRules": [{
            "name": "arbs", "IPAddress": "203.0.113.9", "IPProtocol": "TCP", "portRange": "80-80",
            "loadBalancingScheme": "EXTERNAL",
            "backendService": format!("{P}/regions/us-central1/backendServices/k8s2-bs")
        }]
    });
    let t = targets(&gce, &inst());
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!(t[0].ip, "203.0.113.9");
    assert_eq!(t[0].members, vec![hop(2), hop(3)]);
    assert_eq!(t[0].checks.len(), 1, "{t:?}");
    assert_eq!(t[0].checks[0]["name"], format!("regionHealthChecks/{hc}"));
    assert_eq!(t[0].checks[0]["port"], 10256);
    assert_eq!(t[0].checks[0]["requestPath"], "/healthz");
    assert!(
        internal_rules(&gce).is_empty(),
        "an external rule is not internal"
    );
    // Healthy members only, as for the other kinds.
    assert_eq!(hops(&t[0], |ip, _| ip == "10.128.0.4"), vec![hop(3)]);
    assert!(!t[0].weighted, "no localityLbPolicy: not weighted");
    let mut weighted = gce.clone();
    weighted["backendServices"][0]["localityLbPolicy"] = json!("WEIGHTED_MAGLEV");
    assert!(targets(&weighted, &inst())[0].weighted);
}
