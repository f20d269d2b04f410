//! Invalid Services become errors naming the field, before any GCE call.

use k8s_openapi::api::core::v1::ServicePort;

use crate::error::Error;
use crate::lb::spec::{NETWORK_TIER_ANNOTATION, SOURCE_RANGES_ANNOTATION};
use crate::objects::observed::Observed;
use crate::testutil::Scenario;

fn err(s: Scenario) -> Error {
    s.ensure(&Observed::default()).expect_err("must be rejected")
}

#[test]
fn bad_cidr_in_field_names_the_field() {
    let e = err(Scenario::new().source_ranges(&["10.0.0.0/8", "10.0.0.300/24"]));
    assert!(
        matches!(&e, Error::InvalidSourceRange { value, .. } if value == "10.0.0.300/24"),
        "{e:?}"
    );
    assert_eq!(e.field(), "spec.loadBalancerSourceRanges");
    assert_eq!(e.metric_label(), "invalid_source_range");
    assert!(e.to_string().contains("Service default/web"), "{e}");
}

#[test]
fn bad_cidr_in_annotation_names_the_annotation() {
    let e = err(Scenario::new().annotation(SOURCE_RANGES_ANNOTATION, "1.2.3.0/24, nonsense"));
    assert!(e.field().contains(SOURCE_RANGES_ANNOTATION), "{e}");
    assert!(e.to_string().contains("nonsense"), "{e}");
}

#[test]
fn field_wins_over_annotation() {
    let s = Scenario::new()
        .source_ranges(&["10.1.0.0/16"])
        .annotation(SOURCE_RANGES_ANNOTATION, "garbage");
    let plan = s.ensure(&Observed::default());
    assert!(
        plan.is_ok(),
        "annotation is ignored when the field is set: {plan:?}"
    );
}

#[test]
fn mixed_protocols_rejected() {
    let ports = vec![
        ServicePort {
            port: 53,
            protocol: Some("UDP".into()),
            ..Default::default()
        },
        ServicePort {
            port: 53,
            protocol: Some("TCP".into()),
            ..Default::default()
        },
    ];
    let e = err(Scenario::new().raw_ports(ports));
    assert_eq!(
        e,
        Error::MixedProtocols {
            object: "Service default/web".into(),
            first: "UDP".into(),
            other: "TCP".into()
        }
    );
    assert_eq!(e.field(), "spec.ports");
}

#[test]
fn sctp_and_no_ports_rejected() {
    let e = err(Scenario::new().ports("SCTP", &[9]));
    assert_eq!(e.metric_label(), "unsupported_protocol");
    assert_eq!(e.field(), "spec.ports[0].protocol");
    let e = err(Scenario::new().ports("TCP", &[]));
    assert_eq!(e.metric_label(), "no_ports");
}

#[test]
fn bad_network_tier_rejected() {
    let e = err(Scenario::new().annotation(NETWORK_TIER_ANNOTATION, "premium"));
    assert!(
        matches!(&e, Error::InvalidNetworkTier { value, .. } if value == "premium"),
        "{e:?}"
    );
    assert_eq!(e.field(), NETWORK_TIER_ANNOTATION);
}

#[test]
fn no_eligible_nodes_rejected() {
    let e = err(Scenario::new().with_nodes(vec![]));
    assert_eq!(e.metric_label(), "no_eligible_nodes");
}

#[test]
fn missing_uid_and_bad_requested_ip_rejected() {
    let mut s = Scenario::new();
    s.service.metadata.uid = None;
    assert_eq!(err(s).field(), "metadata.uid");
    let e = err(Scenario::new().load_balancer_ip("not-an-ip"));
    assert_eq!(e.field(), "spec.loadBalancerIP");
}
