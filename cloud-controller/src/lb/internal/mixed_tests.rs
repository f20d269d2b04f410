//! Mixed-protocol internal LBs: ingress-gce's mixed ILB objects (mixedprotocolilbtest: an
//! L3_DEFAULT rule with allPorts over an UNSPECIFIED backend service, the firewall allowing each
//! protocol its ports), on svcnet's upstream-named internal LB.

use k8s_openapi::api::core::v1::ServicePort;

use super::tests::{converge, ilb, setup};
use super::*;
use crate::objects::action::Action;
use crate::objects::observed::IlbObserved;
use crate::testutil::Scenario;

fn port(protocol: &str, port: i32) -> ServicePort {
    ServicePort {
        port,
        protocol: Some(protocol.into()),
        ..Default::default()
    }
}

fn mixed() -> Scenario {
    ilb(Scenario::new()).raw_ports(vec![port("TCP", 80), port("TCP", 443), port("UDP", 53)])
}

#[test]
fn a_mixed_ilb_gets_an_l3_default_rule_on_all_ports_and_an_unspecified_backend_service() {
    let (_, _, d, cfg) = setup(&mixed());
    assert_eq!(d.forwarding_rule.ip_protocol, "L3_DEFAULT");
    assert!(d.forwarding_rule.all_ports);
    assert!(d.forwarding_rule.ports.is_empty());
    assert_eq!(d.forwarding_rule.load_balancing_scheme, "INTERNAL");
    assert_eq!(d.backend_service.protocol, "UNSPECIFIED");
    let fw = traffic_firewall(&d, &cfg, "10.128.0.7");
    let allowed: Vec<(&str, Vec<&str>)> = fw
        .allowed
        .iter()
        .map(|a| {
            (
                a.ip_protocol.as_str(),
                a.ports.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(allowed, [("tcp", vec!["80", "443"]), ("udp", vec!["53"])]);
}

#[test]
fn tcp_to_mixed_replaces_the_rule_before_the_backend_service_changes_and_converges() {
    let mut o = IlbObserved::default();
    converge(&ilb(Scenario::new().ports("TCP", &[80])), &mut o);
    let rounds = converge(&mixed(), &mut o);
    let labels: Vec<&str> = rounds[0].iter().map(Action::label).collect();
    assert_eq!(
        labels,
        [
            "create_address",
            "delete_forwarding_rule",
            "update_backend_service",
            "create_forwarding_rule",
            "patch_firewall",
            "delete_address"
        ]
    );
    let fr = o.forwarding_rule.as_ref().expect("rule");
    assert_eq!((fr.ip_protocol.as_str(), fr.all_ports), ("L3_DEFAULT", true));
    assert_eq!(fr.ip_address, "10.128.0.7", "the IP is kept across the switch");
    let (_, _, d, cfg) = setup(&mixed());
    assert!(plan::plan_ensure(&d, &o, &cfg).actions.is_empty());
}
