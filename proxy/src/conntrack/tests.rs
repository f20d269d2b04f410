use super::*;
use crate::model::{Endpoint, ServicePortName};

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

#[test]
fn removed_udp_endpoint_flows_are_stale_for_every_address() {
    let prev = state(
        Protocol::Udp,
        Some(30053),
        vec![ep("10.244.1.10", true), ep("10.244.1.11", true)],
    );
    let now = state(
        Protocol::Udp,
        Some(30053),
        vec![ep("10.244.1.11", true), ep("10.244.1.12", true)],
    );
    let d = stale_flows(&prev, &now);
    let gone: IpAddr = "10.244.1.10".parse().expect("ip");
    assert_eq!(d.len(), 3, "{d:?}");
    assert!(d.iter().all(|d| d.reply_src == Some(gone)));
    assert!(d.contains(&Deletion {
        orig_dst: None,
        dport: 30053,
        reply_src: Some(gone)
    }));
    assert!(d.contains(&Deletion {
        orig_dst: Some("10.96.0.10".parse().expect("ip")),
        dport: 53,
        reply_src: Some(gone)
    }));
}

#[test]
fn tcp_and_unchanged_services_need_nothing() {
    let prev = state(Protocol::Tcp, None, vec![ep("10.244.1.10", true)]);
    let now = state(Protocol::Tcp, None, vec![]);
    assert!(stale_flows(&prev, &now).is_empty());
    let same = state(Protocol::Udp, None, vec![ep("10.244.1.10", true)]);
    assert!(stale_flows(&same, &same.clone()).is_empty());
}

#[test]
fn first_endpoint_clears_all_flows_to_the_service() {
    let prev = state(Protocol::Udp, None, vec![ep("10.244.1.10", false)]);
    let now = state(Protocol::Udp, None, vec![ep("10.244.1.10", true)]);
    let d = stale_flows(&prev, &now);
    assert_eq!(d.len(), 2);
    assert!(d.iter().all(|d| d.reply_src.is_none() && d.dport == 53));
}

#[test]
fn deleted_service_flows_are_stale() {
    let prev = state(Protocol::Udp, None, vec![ep("10.244.1.10", true)]);
    let d = stale_flows(&prev, &ProxyState::default());
    assert_eq!(d.len(), 2);
}

#[test]
fn cli_args_and_count() {
    let d = Deletion {
        orig_dst: Some("10.96.0.10".parse().expect("ip")),
        dport: 53,
        reply_src: Some("10.244.1.10".parse().expect("ip")),
    };
    assert_eq!(
        args(Family::V4, &d).join(" "),
        "-D -f ipv4 -p udp --orig-dst 10.96.0.10 --orig-port-dst 53 --reply-src 10.244.1.10"
    );
    assert_eq!(
        deleted_count("conntrack v1.4.7 (conntrack-tools): 2 flow entries have been deleted.\n"),
        2
    );
    assert_eq!(deleted_count("garbage"), 0);
}
