use std::net::IpAddr;

use super::*;
use crate::config::{Layout, NftLayout, RenderConfig};
use crate::fixtures::node;
use crate::model::ProxyState;
use crate::nftables::render::maps::MapsChange;
use crate::offline::input::parse_objects;

fn cfg() -> RenderConfig {
    RenderConfig {
        nft_layout: NftLayout::Maps,
        ..crate::fixtures::cfg(Layout::Flat)
    }
}

const VIP: &str = "172.30.0.41";

/// A ClientIP (or, `sticky` false, plain) ClusterIP Service with a node port and `ips` as its
/// ready endpoints.
fn state(sticky: bool, ips: &[&str]) -> ProxyState {
    let affinity = if sticky { "sessionAffinity: ClientIP, " } else { "" };
    let mut yaml = format!(
        "---\nkind: Service\nmetadata: {{name: a, namespace: default}}\nspec: {{type: NodePort, {affinity}clusterIP: {VIP}, ports: [{{port: 80, targetPort: 8080, nodePort: 30080, protocol: TCP}}]}}\n---\nkind: EndpointSlice\nmetadata: {{name: a-x, namespace: default, labels: {{kubernetes.io/service-name: a}}}}\naddressType: IPv4\nports: [{{port: 8080, protocol: TCP}}]\nendpoints:\n"
    );
    for ip in ips {
        yaml.push_str(&format!(
            "- {{addresses: [\"{ip}\"], conditions: {{ready: true}}, nodeName: node-1}}\n"
        ));
    }
    let objs = parse_objects(&yaml).expect("yaml");
    let s = ProxyState::from_k8s(&objs.services, &objs.slices, cfg().family);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    s
}

fn set_all(cache: &mut MapsCache, s: &ProxyState) {
    for (name, svc) in &s.services {
        cache.set_port(name, Some((svc.clone(), s.endpoints.get(name).cloned())));
    }
}

/// The cache loaded with `before`, then given `after`: what it found stale, and the change.
fn step(before: &ProxyState, after: &ProxyState) -> (MapsCache, Stale) {
    let mut cache = MapsCache::new(node(), cfg());
    set_all(&mut cache, before);
    assert_eq!(cache.take_change(true), MapsChange::Replace);
    set_all(&mut cache, after);
    let stale = cache.stale_affinity().clone();
    let change = cache.take_change(false);
    // An endpoint change is element steps; affinity switched off deletes the port's chains.
    let off = after.services.values().all(|s| s.session_affinity.is_none());
    assert_eq!(
        off && !stale.is_empty(),
        change == MapsChange::Replace,
        "{change:?}"
    );
    assert!(cache.stale_affinity().is_empty(), "taken with the change");
    (cache, stale)
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

/// The port of `state`'s Service, with the default timeout.
fn port() -> Sticky {
    let s = state(true, &[]);
    let name = s.services.keys().next().expect("a port");
    Sticky::new(name, 10800)
}

fn entry(ep: &str) -> Entry {
    Entry {
        port: port(),
        client: ip("10.0.0.9"),
        endpoint: (ip(ep), 8080),
        expires_ms: 5_000,
    }
}

#[test]
fn an_endpoint_leaving_makes_its_entries_stale_and_the_one_that_moved_slot_does_not() {
    let (_, stale) = step(
        &state(true, &["10.76.1.5", "10.76.2.5"]),
        &state(true, &["10.76.2.5", "10.76.3.5"]),
    );
    let gone = (ip("10.76.1.5"), 8080);
    assert_eq!(stale, Stale::from([(port(), Some(gone))]));
    assert!(is_stale(&stale, &entry("10.76.1.5")));
    assert!(
        !is_stale(&stale, &entry("10.76.2.5")),
        "moved to slot 0, still there"
    );
    assert!(!is_stale(&stale, &entry("10.76.3.5")));
}

#[test]
fn a_plain_services_endpoint_leaving_stales_nothing() {
    let (_, stale) = step(
        &state(false, &["10.76.1.5", "10.76.2.5"]),
        &state(false, &["10.76.2.5", "10.76.3.5"]),
    );
    assert_eq!(stale, Stale::new(), "no affinity: nothing to read back");
}

#[test]
fn affinity_switched_off_makes_every_entry_of_the_port_stale() {
    let ips = ["10.76.1.5", "10.76.2.5"];
    let (_, stale) = step(&state(true, &ips), &state(false, &ips));
    assert_eq!(stale, Stale::from([(port(), None)]));
    assert!(is_stale(&stale, &entry("10.76.2.5")));
    assert!(is_stale(&stale, &entry("10.76.1.5")));
}

#[test]
fn a_replacement_carries_the_entries_that_still_hold_with_their_time_left() {
    let mut cache = MapsCache::new(node(), cfg());
    set_all(&mut cache, &state(true, &["10.76.2.5", "10.76.3.5"]));
    let other = Entry {
        port: Sticky {
            timeout: 60,
            ..port()
        },
        ..entry("10.76.2.5")
    };
    let entries = [entry("10.76.1.5"), entry("10.76.2.5"), entry("10.76.3.5"), other];
    let got: Vec<String> = carried(&cache, &entries)
        .iter()
        .map(|(e, ms)| format!("{} ({}, {ms} ms)", e.text(), e.set))
        .collect();
    let map = port().map();
    let want = [
        format!("10.0.0.9 : 10.76.2.5 . 8080 ({map}, 5000 ms)"),
        format!("10.0.0.9 : 10.76.3.5 . 8080 ({map}, 5000 ms)"),
    ];
    assert_eq!(got, want, "not the gone endpoint, nor a map of another timeout");

    let mut plain = MapsCache::new(node(), cfg());
    set_all(&mut plain, &state(false, &["10.76.2.5", "10.76.3.5"]));
    assert_eq!(
        carried(&plain, &entries),
        Vec::new(),
        "no affinity: nothing carried"
    );
}

#[test]
fn entries_decode_from_the_kernels_bytes() {
    let read = ReadElement {
        key: vec![10, 0, 0, 9],
        data: Some(vec![10, 76, 1, 5, 0x1f, 0x90, 0, 0]),
        expires_ms: Some(5_000),
    };
    assert_eq!(decode(Family::V4, port(), &read), Some(entry("10.76.1.5")));
    let long = ReadElement {
        key: vec![10, 0, 0, 9, 172, 30, 0, 41],
        ..read.clone()
    };
    assert_eq!(
        decode(Family::V4, port(), &long),
        None,
        "a key of the wrong length"
    );
    let short = ReadElement {
        data: Some(vec![10, 76, 1, 5]),
        ..read
    };
    assert_eq!(decode(Family::V4, port(), &short), None, "data without its port");
}

#[test]
fn ipv6_entries_decode_from_the_kernels_bytes() {
    let client: [u8; 16] = "2001:db8:9::9"
        .parse::<std::net::Ipv6Addr>()
        .expect("v6")
        .octets();
    let ep = [0xfd, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    let read = ReadElement {
        key: client.to_vec(),
        data: Some([&ep[..], &[0x1f, 0x90, 0, 0]].concat()),
        expires_ms: Some(7),
    };
    let want = Entry {
        port: port(),
        client: ip("2001:db8:9::9"),
        endpoint: (ip("fd00:10::2"), 8080),
        expires_ms: 7,
    };
    assert_eq!(decode(Family::V6, port(), &read), Some(want));
    assert_eq!(
        decode(Family::V4, port(), &read),
        None,
        "IPv6 bytes are not an IPv4 entry"
    );
}
