//! Field-by-field comparison with what ingress-gce creates for an RBS NetLB. Expected values are
//! written out from ingress-gce's code and tests (pkg/l4/resources/l4netlb_test.go
//! assertNetLBResources / buildExpectedNetLBAnnotations, l4/healthchecks/healthchecksl4.go
//! newL4HealthCheck, l4/backends/backends.go EnsureL4BackendService, utils.go
//! MakeL4LBServiceDescription; names from utils/namer/l4_namer_test.go with kube-system UID
//! `kubesystem-uid1`), never derived from svcnet's own output.

use serde_json::{Value, json};

use super::ipv6::{ipv6_forwarding_rule_for, ipv6_nodes_firewall};
use super::status::{ipv6_status_annotations, status_annotations};
use super::*;
use crate::lb::hosts::lb_hosts;
use crate::naming::l4::L4Namer;
use crate::testutil::{Scenario, config, node};

const BASE: &str = "https://www.googleapis.com/compute/v1/projects/proj";
const BACKEND: &str = "k8s2-7kpbhpki-namespace-name-956p2p7x";
const LB: &str = "a4f6b2c1e9a3d4b8e8c7f0123456789a";
const HC_SOURCES: [&str; 4] = [
    "130.211.0.0/22",
    "35.191.0.0/16",
    "209.85.152.0/22",
    "209.85.204.0/22",
];

fn scenario() -> Scenario {
    Scenario::new()
        .name("namespace", "name")
        .ports("TCP", &[8080])
        .with_nodes(vec![node("n1", "us-central1-a"), node("n2", "us-central1-b")])
}

fn build(s: &Scenario) -> DesiredRbs {
    let cfg = config();
    let spec = LbSpec::from_service_mixed(&s.service).expect("valid service");
    let names = RbsNames::new(
        &L4Namer::new("kubesystem-uid1"),
        &cfg.cluster_id,
        ("namespace", "name", &spec.uid),
        &spec.object,
    )
    .expect("valid names");
    let (hosts, _) = lb_hosts(&s.nodes);
    desired(&spec, &names, &hosts, &cfg)
}

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("serialisable")
}

#[test]
fn shared_health_check_and_its_firewall_match_ingress_gce() {
    let d = build(&scenario());
    assert_eq!(
        to_json(&d.health_check),
        json!({
            "name": "k8s2-7kpbhpki-l4-shared-hc",
            "description": "{\"networking.gke.io/service-name\":\"\",\"networking.gke.io/api-version\":\"ga\",\"networking.gke.io/resource-description\":\"This resource is shared by all L4 XLB Services using ExternalTrafficPolicy: Cluster.\"}",
            "type": "HTTP",
            "checkIntervalSec": 8, "timeoutSec": 1, "healthyThreshold": 1, "unhealthyThreshold": 3,
            "httpHealthCheck": {"port": 10256, "requestPath": "/healthz"}
        })
    );
    assert_eq!(
        to_json(&d.health_check_firewall),
        json!({
            "name": "k8s2-7kpbhpki-l4-shared-hc-fw",
            // The firewall's type is formatted as "": two spaces.
            "description": "{\"networking.gke.io/service-name\":\"\",\"networking.gke.io/api-version\":\"ga\",\"networking.gke.io/resource-description\":\"This resource is shared by all L4  Services using ExternalTrafficPolicy: Cluster.\"}",
            "network": format!("{BASE}/global/networks/default"),
            "sourceRanges": HC_SOURCES,
            "destinationRanges": [],
            "targetTags": ["svcnet-node"],
            "allowed": [{"IPProtocol": "TCP", "ports": ["10256"]}]
        })
    );
}

#[test]
fn backend_service_matches_ingress_gce() {
    let d = build(&scenario());
    assert_eq!(
        to_json(&d.backend_service),
        json!({
            "name": BACKEND,
            "description": "{\"networking.gke.io/service-name\":\"namespace/name\",\"networking.gke.io/api-version\":\"ga\"}",
            "protocol": "TCP",
            "sessionAffinity": "NONE",
            "loadBalancingScheme": "EXTERNAL",
            "healthChecks": [format!("{BASE}/regions/us-central1/healthChecks/k8s2-7kpbhpki-l4-shared-hc")],
            "backends": [
                {"group": format!("{BASE}/zones/us-central1-a/instanceGroups/k8s-ig--0123456789abcdef")},
                {"group": format!("{BASE}/zones/us-central1-b/instanceGroups/k8s-ig--0123456789abcdef")}
            ],
            "connectionDraining": {"drainingTimeoutSec": 30},
            "networkPassThroughLbTrafficPolicy": {"zonalAffinity": {"spillover": "ZONAL_AFFINITY_DISABLED"}}
        })
    );
    // The groups hold the nodes of their zone, as the internal LBs' do.
    assert_eq!(
        d.instance_groups["us-central1-b"],
        [format!("{BASE}/zones/us-central1-b/instances/n2")]
    );
}

#[test]
fn forwarding_rule_and_nodes_firewall_match_ingress_gce() {
    let d = build(&scenario().ports("TCP", &[8080, 8081, 9000]));
    let cfg = config();
    assert_eq!(
        to_json(&forwarding_rule_for(&d, "203.0.113.7")),
        json!({
            "name": LB,
            "description": "{\"networking.gke.io/service-name\":\"namespace/name\",\"networking.gke.io/api-version\":\"ga\",\"networking.gke.io/service-ip\":\"203.0.113.7\"}",
            "IPAddress": "203.0.113.7",
            "IPProtocol": "TCP",
            "portRange": "8080-9000",
            "networkTier": "PREMIUM",
            "backendService": format!("{BASE}/regions/us-central1/backendServices/{BACKEND}"),
            "loadBalancingScheme": "EXTERNAL"
        })
    );
    assert_eq!(
        to_json(&nodes_firewall(&d, &cfg, "203.0.113.7")),
        json!({
            "name": BACKEND,
            // spec.loadBalancerIP is unset: no service-ip (verifyNetLBIPv4NodesFirewall).
            "description": "{\"networking.gke.io/service-name\":\"namespace/name\",\"networking.gke.io/api-version\":\"ga\"}",
            "network": format!("{BASE}/global/networks/default"),
            "sourceRanges": ["0.0.0.0/0"],
            "destinationRanges": ["203.0.113.7"],
            "targetTags": ["svcnet-node"],
            "allowed": [{"IPProtocol": "TCP", "ports": ["8080-8081", "9000"]}]
        })
    );
}

#[test]
fn etp_local_gets_its_own_check_named_like_the_backend() {
    let d = build(&scenario().etp_local(31234));
    assert!(!d.shared_health_check());
    let hc = &d.health_check;
    assert_eq!(hc.name, BACKEND);
    assert_eq!(
        (
            hc.check_interval_sec,
            hc.timeout_sec,
            hc.healthy_threshold,
            hc.unhealthy_threshold
        ),
        (3, 1, 1, 2)
    );
    assert_eq!(hc.http_health_check.port, 31234);
    assert_eq!(hc.http_health_check.request_path, "/healthz");
    let own =
        "{\"networking.gke.io/service-name\":\"namespace/name\",\"networking.gke.io/api-version\":\"ga\"}";
    assert_eq!(hc.description, own);
    assert_eq!(d.health_check_firewall.name, format!("{BACKEND}-fw"));
    assert_eq!(d.health_check_firewall.description, own);
    assert_eq!(d.health_check_firewall.allowed[0].ports, ["31234"]);
    assert_eq!(
        d.backend_service.health_checks,
        [format!("{BASE}/regions/us-central1/healthChecks/{BACKEND}")]
    );
}

#[test]
fn udp_service_drains_nothing_and_is_annotated_as_udp() {
    let d = build(&scenario().ports("UDP", &[53]).affinity("ClientIP"));
    assert_eq!(d.backend_service.protocol, "UDP");
    assert_eq!(d.backend_service.session_affinity, "CLIENT_IP");
    assert_eq!(
        d.backend_service
            .connection_draining
            .as_ref()
            .map(|c| c.draining_timeout_sec),
        Some(0)
    );
    assert_eq!(d.forwarding_rule.ip_protocol, "UDP");
    let ann = status_annotations(&d);
    assert_eq!(ann.get(ANN_UDP_FORWARDING_RULE).map(String::as_str), Some(LB));
    assert!(!ann.contains_key(ANN_TCP_FORWARDING_RULE));
}

#[test]
fn status_annotations_match_build_expected_net_lb_annotations() {
    let d = build(&scenario());
    let want: BTreeMap<&str, String> = [
        ("service.kubernetes.io/backend-service", BACKEND),
        ("service.kubernetes.io/healthcheck", "k8s2-7kpbhpki-l4-shared-hc"),
        ("service.kubernetes.io/firewall-rule", BACKEND),
        (
            "service.kubernetes.io/firewall-rule-for-hc",
            "k8s2-7kpbhpki-l4-shared-hc-fw",
        ),
        ("service.kubernetes.io/tcp-forwarding-rule", LB),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_owned()))
    .collect();
    assert_eq!(status_annotations(&d), want);
    for key in want.keys() {
        assert!(STATUS_ANNOTATION_KEYS.contains(key), "{key} is cleared on delete");
    }
}

#[test]
fn requested_ip_and_source_ranges_reach_the_nodes_firewall() {
    let d = build(
        &scenario()
            .load_balancer_ip("203.0.113.9")
            .source_ranges(&["10.0.0.0/8", "192.168.1.0/24"]),
    );
    let fw = nodes_firewall(&d, &config(), "203.0.113.9");
    assert_eq!(fw.source_ranges, ["10.0.0.0/8", "192.168.1.0/24"]);
    assert!(
        fw.description
            .ends_with(",\"networking.gke.io/service-ip\":\"203.0.113.9\"}")
    );
}

#[test]
fn ipv6_forwarding_rule_matches_ingress_gce() {
    let d = build(
        &scenario()
            .ports("TCP", &[8080, 9000])
            .ip_families(&["IPv4", "IPv6"]),
    );
    let sub = format!("{BASE}/regions/us-central1/subnetworks/default");
    let want = json!({
        "name": format!("{LB}-ipv6"),
        // MakeL4IPv6ForwardingRuleDescription: service name only, no api-version.
        "description": "{\"networking.gke.io/service-name\":\"namespace/name\"}",
        "IPAddress": "2600:1900:4000:1::/96",
        "IPProtocol": "TCP",
        "portRange": "8080-9000",
        "networkTier": "PREMIUM",
        "backendService": format!("{BASE}/regions/us-central1/backendServices/{BACKEND}"),
        "loadBalancingScheme": "EXTERNAL",
        "subnetwork": sub,
        "ipVersion": "IPV6"
    });
    let rule = ipv6_forwarding_rule_for(&d, "2600:1900:4000:1::", &sub).expect("premium");
    assert_eq!(to_json(&rule), want);
    // An address read back from GCE already carries the prefix: not doubled.
    let again = ipv6_forwarding_rule_for(&d, "2600:1900:4000:1::/96", &sub).expect("premium");
    assert_eq!(to_json(&again), want);
    // The IPv4 rule is untouched by the IPv6 one.
    assert_eq!(to_json(&forwarding_rule_for(&d, "203.0.113.7"))["name"], LB);
    assert!(
        to_json(&forwarding_rule_for(&d, "203.0.113.7"))
            .get("ipVersion")
            .is_none()
    );
}

#[test]
fn ipv6_rule_refuses_standard_tier() {
    let d = build(
        &scenario()
            .ip_families(&["IPv6"])
            .annotation("cloud.google.com/network-tier", "Standard"),
    );
    let Err(err) = ipv6_forwarding_rule_for(&d, "", "sub") else {
        panic!("Standard-tier IPv6 rule built")
    };
    assert_eq!(err.metric_label(), "ipv6_standard_tier");
    assert!(err.to_string().starts_with("Service namespace/name: "), "{err}");
}

#[test]
fn ipv6_nodes_firewall_matches_ingress_gce() {
    let cfg = config();
    let d = build(
        &scenario()
            .ports("TCP", &[8080, 8081, 9000])
            .ip_families(&["IPv4", "IPv6"]),
    );
    assert_eq!(
        to_json(&ipv6_nodes_firewall(&d, &cfg, "2600:1900:4000:1::/96")),
        json!({
            "name": format!("{BACKEND}-ipv6"),
            "description": "{\"networking.gke.io/service-name\":\"namespace/name\",\"networking.gke.io/api-version\":\"ga\"}",
            "network": format!("{BASE}/global/networks/default"),
            // No IPv6 source range listed: allowAllIPv6Range.
            "sourceRanges": ["0::0/0"],
            "destinationRanges": ["2600:1900:4000:1::"],
            "targetTags": ["svcnet-node"],
            "allowed": [{"IPProtocol": "TCP", "ports": ["8080-8081", "9000"]}]
        })
    );
    // Only the IPv6 entries of loadBalancerSourceRanges go to the IPv6 firewall.
    let mut s = scenario().ip_families(&["IPv6"]);
    s.service.spec.get_or_insert_default().load_balancer_source_ranges =
        Some(vec!["10.0.0.0/8".into(), "2001:db8::/32".into()]);
    let d = build(&s);
    let fw = to_json(&ipv6_nodes_firewall(&d, &cfg, "2600:1900:4000:1::"));
    assert_eq!(fw["sourceRanges"], json!(["2001:db8::/32"]));
    assert_eq!(fw["destinationRanges"], json!(["2600:1900:4000:1::"]));
}

#[test]
fn ipv6_status_annotations_match_ingress_gce_keys() {
    let d = build(&scenario().ports("UDP", &[53]).ip_families(&["IPv6", "IPv4"]));
    let got = ipv6_status_annotations(&d);
    assert_eq!(
        got.get("service.kubernetes.io/udp-forwarding-rule-ipv6")
            .map(String::as_str),
        Some(format!("{LB}-ipv6").as_str())
    );
    assert_eq!(
        got.get("service.kubernetes.io/firewall-rule-ipv6")
            .map(String::as_str),
        Some(format!("{BACKEND}-ipv6").as_str())
    );
    // The shared check's IPv6 firewall (ETP Cluster): l4-shared-hc-fw-ipv6.
    let hc_fw = &got["service.kubernetes.io/firewall-rule-for-hc-ipv6"];
    assert!(hc_fw.ends_with("-l4-shared-hc-fw-ipv6"), "{hc_fw}");
    assert_eq!(got.len(), 3);
    // Every key written is one a sync or delete clears.
    assert!(got.keys().all(|k| STATUS_ANNOTATION_KEYS.contains(k)));
}
