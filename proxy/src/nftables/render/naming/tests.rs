//! Hash vectors from upstream's Test_servicePortChainNameBase / Test_servicePortEndpointChainNameBase
//! and names from its TestOverallNFTablesRules.

use super::*;
use crate::model::{Endpoint, Protocol, ServicePortName};

const LONG_NS: &str = "very-long-namespace-name-abcdefghijklmnopqrstuvwxyz0123456789xx";
const LONG_NAME: &str = "very-long-service-name-why-would-you-even-do-this-i-mean-really";
const LONG_PORT: &str = "port-443-providing-the-hypertext-transmission-protocol-with-tls";

fn spn(ns: &str, name: &str, port: &str, protocol: Protocol) -> ServicePortName {
    ServicePortName {
        namespace: ns.into(),
        name: name.into(),
        port: port.into(),
        protocol,
    }
}

/// Upstream's vectors hash the address text as given (some not canonical), so they go through
/// `endpoint_base_of`; real endpoints are printed canonically first, as upstream's cache does.
fn base_of(name: &ServicePortName, addr: &str) -> String {
    let (ip, port) = addr.rsplit_once(':').expect("ip:port");
    endpoint_base_of(name, ip.trim_matches(['[', ']']), port.parse().expect("port"))
}

fn ep(addr: &str) -> Endpoint {
    let (ip, port) = addr.rsplit_once(':').expect("ip:port");
    Endpoint {
        ip: ip.trim_matches(['[', ']']).parse().expect("ip"),
        port: port.parse().expect("port"),
        ready: true,
        serving: true,
        terminating: false,
        node_name: None,
        hints: None,
    }
}

#[test]
fn service_base_vectors() {
    let http = spn("testing", "service", "http", Protocol::Tcp);
    assert_eq!(service_base(&http), "P4ZYZVCF-testing/service/tcp/http");
    let https = spn("testing", "service", "https", Protocol::Tcp);
    assert_eq!(service_base(&https), "LZBRENCP-testing/service/tcp/https");
    let long = spn(LONG_NS, LONG_NAME, LONG_PORT, Protocol::Sctp);
    assert_eq!(
        service_base(&long),
        format!("KR6NACJP-{LONG_NS}/{LONG_NAME}/sctp/{LONG_PORT}")
    );
}

#[test]
fn endpoint_base_vectors() {
    let http = spn("testing", "service", "http", Protocol::Tcp);
    for (addr, want) in [
        (
            "10.180.0.1:80",
            "JO2XBXZR-testing/service/tcp/http__10.180.0.1/80",
        ),
        (
            "10.180.0.2:80",
            "5S6H3H22-testing/service/tcp/http__10.180.0.2/80",
        ),
        (
            "[fd80:abcd:12::a1b2:c3d4:e5f6:9999]:80",
            "U7E2ET36-testing/service/tcp/http__fd80.abcd.12..a1b2.c3d4.e5f6.9999/80",
        ),
    ] {
        assert_eq!(base_of(&http, addr), want, "{addr}");
    }
}

#[test]
fn endpoint_base_truncation_vectors() {
    let long = spn(LONG_NS, LONG_NAME, LONG_PORT, Protocol::Sctp);
    let head = format!("{LONG_NS}/{LONG_NAME}/sctp/{LONG_PORT}");
    assert_eq!(
        base_of(&long, "[1234:5678:9abc:def0::abc:1234]:443"),
        format!("5YS7AFEA-{head}__1234.5678.9abc.def0..abc.1234/443")
    );
    let cut1 = base_of(&long, "[1234:5678:9abc:def0::abcd:1234:5678]:443");
    assert_eq!(
        cut1,
        format!("CI6C53Q3-{head}__1234.5678.9abc.def0..abcd.1234...")
    );
    assert_eq!(cut1.len(), 240);
    // A different address cut to the same text still gets its own hash.
    assert_eq!(
        base_of(&long, "[1234:5678:9abc:def0::abcd:1234:8765]:443"),
        format!("2FLXFK6X-{head}__1234.5678.9abc.def0..abcd.1234...")
    );
}

#[test]
fn chain_names_from_overall_rules() {
    let svc5 = spn("ns5", "svc5", "p80", Protocol::Tcp);
    let names = ServiceNames::new(&svc5);
    assert_eq!(names.cluster, "service-HVFWP5L3-ns5/svc5/tcp/p80");
    assert_eq!(names.external, "external-HVFWP5L3-ns5/svc5/tcp/p80");
    assert_eq!(names.firewall, "firewall-HVFWP5L3-ns5/svc5/tcp/p80");
    assert_eq!(names.local, "local-HVFWP5L3-ns5/svc5/tcp/p80");
    let (chain, set) = endpoint_names(&svc5, &ep("10.180.0.3:80"));
    assert_eq!(chain, "endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80");
    assert_eq!(set, "affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80");
    assert!(is_service_chain(&chain) && !is_service_chain(SERVICES));
    assert!(is_affinity_set(&set) && !is_affinity_set(CLUSTER_IPS));
}

#[test]
fn endpoints_are_named_by_their_canonical_address() {
    let http = spn("testing", "service", "http", Protocol::Tcp);
    // One zero group is written out, as Go's net.IP.String() and Rust's Display both print it.
    assert_eq!(
        endpoint_base(&http, &ep("[fd80:abcd:12::a1b2:c3d4:e5f6:9999]:80")),
        base_of(&http, "[fd80:abcd:12:0:a1b2:c3d4:e5f6:9999]:80")
    );
    assert_eq!(
        endpoint_base(&http, &ep("10.180.0.1:80")),
        "JO2XBXZR-testing/service/tcp/http__10.180.0.1/80"
    );
}

#[test]
fn unnamed_port_keeps_its_slash() {
    let unnamed = spn("default", "kubernetes", "", Protocol::Tcp);
    assert!(service_base(&unnamed).ends_with("-default/kubernetes/tcp/"));
}
