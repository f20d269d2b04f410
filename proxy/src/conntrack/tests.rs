use super::*;
use crate::model::{Endpoint, ServicePort, ServicePortName};

fn name(proto: Protocol) -> ServicePortName {
    ServicePortName {
        namespace: "default".into(),
        name: "dns".into(),
        port: "".into(),
        protocol: proto,
    }
}

fn svc(proto: Protocol, node_port: Option<u16>) -> ServicePort {
    ServicePort {
        name: name(proto),
        cluster_ip: "10.96.0.10".parse().expect("ip"),
        port: 53,
        node_port,
        external_ips: vec!["198.51.100.7".parse().expect("ip")],
        load_balancer_vips: vec![],
        source_ranges: None,
        health_check_node_port: None,
        session_affinity: None,
        external_policy_local: false,
        internal_policy_local: false,
    }
}

fn ep(ip: &str, ready: bool) -> Endpoint {
    Endpoint {
        ip: ip.parse().expect("ip"),
        port: 5353,
        ready,
        serving: ready,
        terminating: false,
        node_name: None,
        hints: None,
    }
}

fn state(proto: Protocol, node_port: Option<u16>, eps: Vec<Endpoint>) -> ProxyState {
    let mut s = ProxyState::default();
    s.services.insert(name(proto), svc(proto, node_port).into());
    s.endpoints.insert(name(proto), eps.into());
    s
}

fn flow(dst: &str, dport: u16, reply_src: &str) -> Flow {
    Flow {
        orig_dst: dst.parse().expect("ip"),
        orig_dport: dport,
        reply_src: reply_src.parse().expect("ip"),
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

#[test]
fn flows_answered_by_a_gone_endpoint_are_stale_for_every_address() {
    let now = state(
        Protocol::Udp,
        Some(30053),
        vec![ep("10.244.1.11", true), ep("10.244.1.12", true)],
    );
    let flows = [
        flow("10.96.0.10", 53, "10.244.1.10"),    // cluster IP -> gone endpoint
        flow("198.51.100.7", 53, "10.244.1.10"),  // external IP -> gone endpoint
        flow("172.30.0.2", 30053, "10.244.1.10"), // nodePort -> gone endpoint
        flow("10.96.0.10", 53, "10.244.1.11"),    // still serving: kept
        flow("172.30.0.2", 30053, "10.244.1.12"), // still serving: kept
    ];
    let d = stale_flows(&now, &UdpTargets::default(), &flows);
    assert_eq!(
        d,
        vec![
            Deletion {
                orig_dst: None,
                dport: 30053,
                reply_src: ip("10.244.1.10")
            },
            Deletion {
                orig_dst: Some(ip("10.96.0.10")),
                dport: 53,
                reply_src: ip("10.244.1.10")
            },
            Deletion {
                orig_dst: Some(ip("198.51.100.7")),
                dport: 53,
                reply_src: ip("10.244.1.10")
            },
        ]
    );
}

#[test]
fn flows_from_before_the_first_endpoint_are_stale() {
    // Created while packets were rejected (or before the rules existed): not DNATed, so the reply
    // comes from the service address itself.
    let now = state(Protocol::Udp, None, vec![ep("10.244.1.10", true)]);
    let d = stale_flows(
        &now,
        &UdpTargets::default(),
        &[flow("10.96.0.10", 53, "10.96.0.10")],
    );
    assert_eq!(
        d,
        vec![Deletion {
            orig_dst: Some(ip("10.96.0.10")),
            dport: 53,
            reply_src: ip("10.96.0.10")
        }]
    );
}

#[test]
fn tcp_services_and_other_flows_are_left_alone() {
    let none = UdpTargets::default();
    let stale = [flow("10.96.0.10", 53, "10.244.1.10")];
    let tcp = state(Protocol::Tcp, None, vec![ep("10.244.1.11", true)]);
    assert!(stale_flows(&tcp, &none, &stale).is_empty());
    assert!(!worth_listing(&UdpTargets::of(&tcp), &none));
    let udp = state(Protocol::Udp, None, vec![ep("10.244.1.11", true)]);
    assert!(worth_listing(&UdpTargets::of(&udp), &none));
    // Another destination, or the service address on another port.
    assert!(stale_flows(&udp, &none, &[flow("10.96.0.11", 53, "10.244.1.10")]).is_empty());
    assert!(stale_flows(&udp, &none, &[flow("10.96.0.10", 54, "10.244.1.10")]).is_empty());
}

#[test]
fn a_service_scaled_to_zero_loses_every_flow() {
    // kubernetes#139629: one-way senders refresh the entry forever, DNATed to a deleted pod.
    let none = UdpTargets::default();
    let flows = [
        flow("10.96.0.10", 53, "10.244.1.10"),
        flow("172.30.0.2", 30053, "10.244.1.10"),
    ];
    for eps in [vec![], vec![ep("10.244.1.11", false)]] {
        let zero = state(Protocol::Udp, Some(30053), eps);
        assert!(worth_listing(&UdpTargets::of(&zero), &none));
        let d = stale_flows(&zero, &none, &flows);
        assert_eq!(d.len(), 2, "{d:?}");
    }
}

#[test]
fn a_deleted_service_loses_its_flows_unless_its_address_is_reused() {
    // kubernetes#141371: the state no longer has the service, the previous sync did.
    let before = UdpTargets::of(&state(Protocol::Udp, Some(30053), vec![ep("10.244.1.10", true)]));
    let empty = ProxyState::default();
    assert!(worth_listing(&UdpTargets::of(&empty), &before));
    let flows = [
        flow("10.96.0.10", 53, "10.244.1.10"),
        flow("198.51.100.7", 53, "10.244.1.10"),
        flow("172.30.0.2", 30053, "10.244.1.10"),
        flow("10.96.0.99", 53, "10.244.1.10"),
    ];
    assert_eq!(stale_flows(&empty, &before, &flows).len(), 3);
    // The same addresses now serve another service with that endpoint: its flows stay.
    let reused = state(Protocol::Udp, Some(30053), vec![ep("10.244.1.10", true)]);
    assert!(stale_flows(&reused, &before, &flows).is_empty());
}

#[test]
fn terminating_but_serving_endpoints_keep_their_flows() {
    let mut e = ep("10.244.1.10", false);
    e.serving = true;
    e.terminating = true;
    let now = state(Protocol::Udp, None, vec![e]);
    assert!(
        stale_flows(
            &now,
            &UdpTargets::default(),
            &[flow("10.96.0.10", 53, "10.244.1.10")]
        )
        .is_empty()
    );
}

#[test]
fn conntrack_listing_is_parsed_into_original_destination_and_reply_source() {
    let text = "\
udp      17 29 src=172.30.0.10 dst=10.96.0.10 sport=40000 dport=53 src=10.244.1.10 dst=172.30.0.10 sport=5353 dport=40000 [ASSURED] mark=0 use=1
udp      17 12 src=fd00::10 dst=fd00:10:96::a sport=40001 dport=53 [UNREPLIED] src=fd00:10:244:1::b dst=fd00::10 sport=5353 dport=40001 mark=0 use=1
tcp      6 431999 ESTABLISHED src=1.2.3.4 dst=5.6.7.8 sport=1 dport=2 src=5.6.7.8 dst=1.2.3.4 sport=2 dport=1 mark=0 use=1
udp      17 29 src=garbage
";
    assert_eq!(
        parse_flows(text),
        vec![
            flow("10.96.0.10", 53, "10.244.1.10"),
            flow("fd00:10:96::a", 53, "fd00:10:244:1::b"),
        ]
    );
}

#[test]
fn cli_args_and_count() {
    let d = Deletion {
        orig_dst: Some(ip("10.96.0.10")),
        dport: 53,
        reply_src: ip("10.244.1.10"),
    };
    assert_eq!(
        args(Family::V4, &d).join(" "),
        "-D -f ipv4 -p udp --orig-dst 10.96.0.10 --orig-port-dst 53 --reply-src 10.244.1.10"
    );
    assert_eq!(list_args(Family::V6).join(" "), "-L -f ipv6 -p udp");
    assert_eq!(
        deleted_count("conntrack v1.4.7 (conntrack-tools): 2 flow entries have been deleted.\n"),
        2
    );
    assert_eq!(deleted_count("garbage"), 0);
}
