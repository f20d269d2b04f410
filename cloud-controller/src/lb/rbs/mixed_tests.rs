//! Mixed protocols and weighted load balancing on RBS NetLBs, against ingress-gce's expected
//! objects (pkg/loadbalancers/mixedprotocoltest/mixedprotocolnetlbtest: MixedResources,
//! AnnotationsMixed-style keys per rule protocol from forwardingrules.AnnotationKey; backends.go
//! LocalityLBPolicy* and l4netlb.go isWeightedLBPodsPerNode), written out, not derived.

use k8s_openapi::api::core::v1::ServicePort;

use super::*;
use crate::error::Error;
use crate::lb::hosts::lb_hosts;
use crate::lb::rbs::status::status_annotations;
use crate::lb::spec::{WEIGHTED_LB_ANNOTATION, WEIGHTED_LB_PODS_PER_NODE};
use crate::naming::l4::L4Namer;
use crate::testutil::{Scenario, config, node};

const LB: &str = "a4f6b2c1e9a3d4b8e8c7f0123456789a";

fn port(protocol: &str, port: i32) -> ServicePort {
    ServicePort {
        port,
        protocol: Some(protocol.into()),
        ..Default::default()
    }
}

/// ingress-gce's mixed fixture: tcp 80 and 443, udp 53.
fn mixed() -> Scenario {
    Scenario::new()
        .name("namespace", "name")
        .raw_ports(vec![port("TCP", 80), port("TCP", 443), port("UDP", 53)])
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
    desired(&spec, &names, &lb_hosts(&s.nodes).0, &cfg)
}

#[test]
fn a_mixed_service_gets_one_l3_default_rule_and_an_unspecified_backend_service() {
    let d = build(&mixed());
    let fr = forwarding_rule_for(&d, "34.122.234.156");
    assert_eq!(fr.name, LB, "the legacy a<uid> name, as ForwardingRuleLegacyName");
    assert_eq!(fr.ip_protocol, "L3_DEFAULT");
    assert!(fr.all_ports);
    assert_eq!(fr.port_range, "", "allPorts excludes a port range");
    assert!(fr.ports.is_empty());
    assert_eq!(fr.load_balancing_scheme, "EXTERNAL");
    assert_eq!(d.backend_service.protocol, "UNSPECIFIED");
    assert_eq!(
        d.backend_service
            .connection_draining
            .as_ref()
            .map(|c| c.draining_timeout_sec),
        Some(0),
        "only TCP backend services drain"
    );
}

#[test]
fn a_mixed_service_firewall_allows_each_protocol_its_own_ports() {
    let d = build(&mixed());
    let fw = nodes_firewall(&d, &config(), "34.122.234.156");
    let allowed: BTreeMap<String, Vec<String>> = fw
        .allowed
        .iter()
        .map(|a| (a.ip_protocol.clone(), a.ports.clone()))
        .collect();
    let want: BTreeMap<String, Vec<String>> = [
        ("tcp".to_owned(), vec!["80".to_owned(), "443".to_owned()]),
        ("udp".to_owned(), vec!["53".to_owned()]),
    ]
    .into();
    assert_eq!(allowed, want);
    assert_eq!(fw.allowed.len(), 2);
    assert_eq!(fw.destination_ranges, ["34.122.234.156"]);
}

#[test]
fn a_mixed_service_is_annotated_with_the_l3_rule_only() {
    let d = build(&mixed());
    let ann = status_annotations(&d);
    assert_eq!(
        ann.get("service.kubernetes.io/l3-forwarding-rule")
            .map(String::as_str),
        Some(LB)
    );
    assert!(!ann.contains_key(ANN_TCP_FORWARDING_RULE));
    assert!(!ann.contains_key(ANN_UDP_FORWARDING_RULE));
    assert!(STATUS_ANNOTATION_KEYS.contains(&ANN_L3_FORWARDING_RULE));
}

#[test]
fn single_protocol_services_keep_their_protocol_rule() {
    let d = build(&mixed().raw_ports(vec![port("UDP", 53), port("UDP", 54)]));
    assert_eq!(d.forwarding_rule.ip_protocol, "UDP");
    assert!(!d.forwarding_rule.all_ports);
    assert_eq!(d.forwarding_rule.port_range, "53-54");
    assert_eq!(d.backend_service.protocol, "UDP");
}

#[test]
fn target_pool_specs_still_refuse_mixed_protocols_and_both_refuse_sctp() {
    let s = mixed();
    assert!(matches!(
        LbSpec::from_service(&s.service),
        Err(Error::MixedProtocols { .. })
    ));
    let sctp = mixed().raw_ports(vec![port("TCP", 80), port("SCTP", 90)]);
    match LbSpec::from_service_mixed(&sctp.service) {
        Err(Error::UnsupportedProtocol { field, value, .. }) => {
            assert_eq!(field, "spec.ports[1].protocol");
            assert_eq!(value, "SCTP");
        }
        other => panic!("{other:?}"),
    }
}

fn weighted(s: Scenario) -> Scenario {
    s.annotation(WEIGHTED_LB_ANNOTATION, WEIGHTED_LB_PODS_PER_NODE)
}

#[test]
fn weighted_maglev_needs_the_annotation_and_etp_local() {
    let tcp = || mixed().raw_ports(vec![port("TCP", 80)]);
    let policy = |s: &Scenario| build(s).backend_service.locality_lb_policy;
    assert_eq!(policy(&weighted(tcp().etp_local(31000))), "WEIGHTED_MAGLEV");
    assert_eq!(policy(&weighted(tcp())), "", "ETP Cluster: not weighted");
    assert_eq!(policy(&tcp().etp_local(31000)), "", "no annotation");
    assert_eq!(
        policy(
            &tcp()
                .etp_local(31000)
                .annotation(WEIGHTED_LB_ANNOTATION, "Pods-Per-Node")
        ),
        "",
        "the value is compared exactly"
    );
    // Weighting rides on the Service's own HTTP check, the one that answers with the weight.
    let d = build(&weighted(tcp().etp_local(31000)));
    assert_eq!(d.health_check.type_, "HTTP");
    assert_eq!(d.health_check.http_health_check.port, 31000);
}
