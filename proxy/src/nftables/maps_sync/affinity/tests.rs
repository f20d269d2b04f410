use std::net::IpAddr;

use super::*;
use crate::config::{Layout, NftLayout, RenderConfig};
use crate::fixtures::node;
use crate::model::ProxyState;
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

/// The cache loaded with `before`, and the element steps to `after`.
fn step(before: &ProxyState, after: &ProxyState) -> (MapsCache, MapsChange) {
    let mut cache = MapsCache::new(node(), cfg());
    set_all(&mut cache, before);
    assert_eq!(cache.take_change(true), MapsChange::Replace);
    set_all(&mut cache, after);
    let change = cache.take_change(false);
    assert!(matches!(change, MapsChange::Elements { .. }), "{change:?}");
    (cache, change)
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

fn addr_key() -> Key {
    Key::new(&[Part::Addr(ip(VIP)), Part::Proto(Protocol::Tcp), Part::Port(80)])
}

fn port_key() -> Key {
    Key::new(&[Part::Proto(Protocol::Tcp), Part::Port(30080)])
}

fn entry(by_port: bool, ep: &str) -> Entry {
    Entry {
        by_port,
        client: ip("10.0.0.9"),
        key: if by_port { port_key() } else { addr_key() },
        endpoint: (ip(ep), 8080),
        expires_ms: 5_000,
    }
}

#[test]
fn an_endpoint_leaving_makes_its_entries_stale_and_the_one_that_moved_slot_does_not() {
    let (cache, change) = step(
        &state(true, &["10.76.1.5", "10.76.2.5"]),
        &state(true, &["10.76.2.5", "10.76.3.5"]),
    );
    let stale = stale(&change, &cache);
    let gone = (ip("10.76.1.5"), 8080);
    assert_eq!(
        stale,
        Stale::from([(false, addr_key(), Some(gone)), (true, port_key(), Some(gone))])
    );
    for by_port in [false, true] {
        assert!(is_stale(&stale, &entry(by_port, "10.76.1.5")));
        assert!(
            !is_stale(&stale, &entry(by_port, "10.76.2.5")),
            "moved to slot 0, still there"
        );
        assert!(!is_stale(&stale, &entry(by_port, "10.76.3.5")));
    }
}

#[test]
fn a_plain_services_endpoint_leaving_stales_nothing() {
    let (cache, change) = step(
        &state(false, &["10.76.1.5", "10.76.2.5"]),
        &state(false, &["10.76.2.5", "10.76.3.5"]),
    );
    assert_eq!(
        stale(&change, &cache),
        Stale::new(),
        "no affinity: nothing to read back"
    );
}

#[test]
fn affinity_switched_off_makes_every_entry_of_the_key_stale() {
    let ips = ["10.76.1.5", "10.76.2.5"];
    let (cache, change) = step(&state(true, &ips), &state(false, &ips));
    let stale = stale(&change, &cache);
    assert_eq!(
        stale,
        Stale::from([(false, addr_key(), None), (true, port_key(), None)])
    );
    assert!(is_stale(&stale, &entry(false, "10.76.2.5")));
    assert!(is_stale(&stale, &entry(true, "10.76.1.5")));
}

#[test]
fn a_replacement_carries_the_entries_that_still_hold_with_their_time_left() {
    let mut cache = MapsCache::new(node(), cfg());
    set_all(&mut cache, &state(true, &["10.76.2.5", "10.76.3.5"]));
    let entries = [
        entry(false, "10.76.1.5"),
        entry(false, "10.76.2.5"),
        entry(true, "10.76.3.5"),
    ];
    let got = carried(&cache, &entries);
    let want: Vec<String> = vec![
        "10.0.0.9 . 172.30.0.41 . tcp . 80 : 10.76.2.5 . 8080 (affinity, 5000 ms)".into(),
        "10.0.0.9 . tcp . 30080 : 10.76.3.5 . 8080 (np-affinity, 5000 ms)".into(),
    ];
    let got: Vec<String> = got
        .iter()
        .map(|(e, ms)| format!("{} ({}, {ms} ms)", e.text(), e.set))
        .collect();
    assert_eq!(got, want);

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
    let addr = ReadElement {
        key: vec![10, 0, 0, 9, 172, 30, 0, 41, 6, 0, 0, 0, 0, 80, 0, 0],
        data: Some(vec![10, 76, 1, 5, 0x1f, 0x90, 0, 0]),
        expires_ms: Some(5_000),
    };
    assert_eq!(decode(Family::V4, false, &addr), Some(entry(false, "10.76.1.5")));
    let port = ReadElement {
        key: vec![10, 0, 0, 9, 6, 0, 0, 0, 0x75, 0x80, 0, 0],
        data: Some(vec![10, 76, 1, 5, 0x1f, 0x90, 0, 0]),
        expires_ms: Some(5_000),
    };
    assert_eq!(decode(Family::V4, true, &port), Some(entry(true, "10.76.1.5")));
    let short = ReadElement {
        key: addr.key[..12].to_vec(),
        ..addr.clone()
    };
    assert_eq!(
        decode(Family::V4, false, &short),
        None,
        "an address key of the wrong length"
    );
    let udp_unknown = ReadElement {
        key: vec![10, 0, 0, 9, 99, 0, 0, 0, 0x75, 0x80, 0, 0],
        ..port
    };
    assert_eq!(
        decode(Family::V4, true, &udp_unknown),
        None,
        "an unknown protocol"
    );
}

#[test]
fn ipv6_entries_decode_from_the_kernels_bytes() {
    let client: [u8; 16] = "2001:db8:9::9"
        .parse::<std::net::Ipv6Addr>()
        .expect("v6")
        .octets();
    let vip = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let ep = [0xfd, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    let mut key = [client, vip].concat();
    key.extend([17, 0, 0, 0, 0, 53, 0, 0]);
    let read = ReadElement {
        key,
        data: Some([&ep[..], &[0x1f, 0x90, 0, 0]].concat()),
        expires_ms: Some(7),
    };
    let want = Entry {
        by_port: false,
        client: ip("2001:db8:9::9"),
        key: Key::new(&[
            Part::Addr(ip("fd00::1")),
            Part::Proto(Protocol::Udp),
            Part::Port(53),
        ]),
        endpoint: (ip("fd00:10::2"), 8080),
        expires_ms: 7,
    };
    assert_eq!(decode(Family::V6, false, &read), Some(want));
    assert_eq!(
        decode(Family::V4, false, &read),
        None,
        "IPv6 bytes are not an IPv4 entry"
    );
    let short = ReadElement {
        data: Some(ep.to_vec()),
        ..read
    };
    assert_eq!(decode(Family::V6, false, &short), None, "data without its port");
}
