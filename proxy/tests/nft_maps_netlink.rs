//! svcnet's netlink writer for the maps layout's element steps, against `nft -f`: the same states
//! reached through netlink element batches in one throwaway namespace and loaded whole by `nft -f`
//! in another list the same (`nft -j list table`, compared by `common::nft_listing`). The states
//! make every port's elements go through netlink both ways: the first load holds every port, then
//! half the ports leave (deletions), come back (additions), every endpoint moves to another address
//! (slot values and hairpin pairs replaced), the other half leaves and comes back. The clusters
//! carry every kind of element: slot maps of each group, affinity sets, source ranges as prefixes
//! and as single addresses (`@fw-allow` intervals), UDP and SCTP, IPv4 and IPv6.

mod common;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use svcnet_proxy::config::{DetectLocal, NftLayout, RenderConfig};
use svcnet_proxy::model::{Endpoint, Family, NodeFacts, ProxyState, ServicePortName};
use svcnet_proxy::nftables::netlink::{self, encode_elements};
use svcnet_proxy::nftables::render::maps::{FW_ALLOW, MapsCache, MapsChange, SetName, nft_loadable};
use svcnet_proxy::nftables::socket::NftSocket;

/// `nft -f`, without the IPv6 affinity record rules nft 1.0.6 cannot load (on both sides).
fn load(ns: &svcnet_netns::Netns, text: &str) {
    let (ok, _, err) = ns.exec(&["nft", "-f", "-"], &nft_loadable(text).0);
    assert!(ok, "nft -f: {err}");
}

/// Another address of the same family for an endpoint (last byte flipped).
fn moved(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let mut o = a.octets();
            o[3] ^= 0x40;
            IpAddr::from(o)
        }
        IpAddr::V6(a) => {
            let mut o = a.octets();
            o[15] ^= 0x40;
            IpAddr::from(o)
        }
    }
}

/// `full` without the ports whose index has parity `odd`, or with every endpoint moved.
fn variant(full: &ProxyState, drop_parity: Option<usize>, move_eps: bool) -> ProxyState {
    let mut s = ProxyState::default();
    for (i, (name, svc)) in full.services.iter().enumerate() {
        if drop_parity == Some(i % 2) {
            continue;
        }
        s.services.insert(name.clone(), svc.clone());
        if let Some(eps) = full.endpoints.get(name) {
            let eps = match move_eps {
                false => eps.clone(),
                true => eps
                    .iter()
                    .map(|e| Endpoint {
                        ip: moved(e.ip),
                        ..e.clone()
                    })
                    .collect::<Vec<_>>()
                    .into(),
            };
            s.endpoints.insert(name.clone(), eps);
        }
    }
    s
}

/// Gives the cache the ports whose records differ from what it holds.
fn update(cache: &mut MapsCache, state: &ProxyState) {
    let gone: Vec<ServicePortName> = cache
        .port_names()
        .filter(|n| !state.services.contains_key(*n))
        .cloned()
        .collect();
    for n in gone {
        cache.set_port(&n, None);
    }
    for (n, svc) in &state.services {
        let eps = state.endpoints.get(n).cloned();
        let same = cache.records(n).is_some_and(|(s, e)| {
            Arc::ptr_eq(s, svc)
                && match (e, &eps) {
                    (None, None) => true,
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    _ => false,
                }
        });
        if !same {
            cache.set_port(n, Some((svc.clone(), eps)));
        }
    }
}

/// Runs the steps of the module doc for one cluster and family; returns (netlink batches, elements
/// they carried, of which `@fw-allow` ones).
fn run(tag: &str, yaml: &str, node: NodeFacts, cfg: RenderConfig) -> Option<(usize, usize, usize)> {
    let fam = match cfg.family {
        Family::V4 => "ip",
        Family::V6 => "ip6",
    };
    let objs = svcnet_proxy::offline::input::parse_objects(yaml).expect("yaml");
    let full = ProxyState::from_k8s(&objs.services, &objs.slices, cfg.family);
    assert!(!full.services.is_empty(), "{tag}: no service of this family");
    let (nl, fresh) = (
        svcnet_netns::netns_or_skip(&format!("{tag}nl"))?,
        svcnet_netns::netns_or_skip(&format!("{tag}f"))?,
    );
    let path = Path::new("/run/netns").join(nl.name());
    let mut cache = MapsCache::new(node, cfg);
    update(&mut cache, &full);
    assert_eq!(cache.take_change(true), MapsChange::Replace);
    load(&nl, &cache.replace_text());
    let steps = [
        variant(&full, Some(1), false),
        variant(&full, None, false),
        variant(&full, None, true),
        variant(&full, Some(0), true),
        variant(&full, None, false),
    ];
    let (mut batches, mut elements, mut fw, mut port_growths) = (0, 0, 0, 0);
    for (i, state) in steps.iter().enumerate() {
        update(&mut cache, state);
        let mut socket = NftSocket::open_in(&path, Duration::from_secs(10)).expect("netlink socket");
        let (change, grew) = apply_step(&format!("{tag} step {i}"), &mut socket, &cache);
        assert!(!change.is_empty(), "{tag} step {i}: nothing changed");
        port_growths += usize::from(grew);
        batches += 1;
        elements += change.len();
        if let MapsChange::Elements { delete, add } = &change {
            fw += delete
                .iter()
                .chain(add)
                .filter(|e| e.set == SetName::Fixed(FW_ALLOW))
                .count();
        }
        cache.commit_change(false, &change);
        load(&fresh, &cache.replace_text());
        same(&nl, &fresh, fam, &format!("{tag} step {i}"));
    }
    // Affinity ports leave (their chains and map deleted) and come back (added) by growths.
    assert!(
        port_growths >= 2,
        "{tag}: affinity ports left and came back: {port_growths}"
    );
    // 17: a first outer and inner bucket (two new chains, a jump in `services`); 18: a rule in
    // the inner bucket's chain; 25: a new inner bucket (a new chain, a jump in the outer one's).
    let outer = "dispatch-17-80";
    let growths = [
        Growth {
            n: 17,
            new: &[outer, "dispatch-17-24"],
            changed: &["services", "nodeports"],
        },
        Growth {
            n: 18,
            new: &[],
            changed: &["dispatch-17-24"],
        },
        Growth {
            n: 25,
            new: &["dispatch-25-32"],
            changed: &[outer],
        },
    ];
    for g in growths {
        grow(tag, fam, &nl, &fresh, &mut cache, &full, g);
    }
    Some((batches, elements, fw))
}

/// The listing, without IPv6 affinity record rules: the `nft -f` side cannot load them (nft 1.0.6
/// aborts), the netlink side writes them for the affinity ports a growth adds; and without the
/// size the kernel gives a dynamic map when a record rule binds it.
fn comparable(ns: &svcnet_netns::Netns, fam: &str) -> Vec<serde_json::Value> {
    let listing = common::nft_listing(ns, fam);
    if fam != "ip6" {
        return listing;
    }
    let record = |v: &serde_json::Value| v.get("rule").is_some() && v.to_string().contains("update @");
    listing
        .into_iter()
        .filter(|v| !record(v))
        .map(|mut v| {
            if let Some(m) = v.get_mut("map").and_then(|m| m.as_object_mut()) {
                m.remove("size");
            }
            v
        })
        .collect()
}

/// Both listings are the same ([`comparable`]); else fails naming what only one side has.
fn same(nl: &svcnet_netns::Netns, fresh: &svcnet_netns::Netns, fam: &str, what: &str) {
    let (a, b) = (comparable(nl, fam), comparable(fresh, fam));
    if a != b {
        let only = |x: &[serde_json::Value], y: &[serde_json::Value]| -> Vec<String> {
            x.iter()
                .filter(|v| !y.contains(v))
                .map(|v| v.to_string())
                .collect()
        };
        panic!(
            "{what}: netlink and a fresh nft -f load differ\nnetlink only: {:#?}\nnft -f only: {:#?}",
            only(&a, &b),
            only(&b, &a)
        );
    }
}

/// The cache's change applied on `socket`: element steps, or (affinity ports come or gone) a
/// growth placed by the kernel's handles. Returns the change and whether it was a growth.
fn apply_step(what: &str, socket: &mut NftSocket, cache: &MapsCache) -> (MapsChange, bool) {
    let family = cache.cfg().family;
    let grew = cache.peek_change(false) == MapsChange::Replace;
    let change = cache.element_steps();
    let MapsChange::Elements { delete, add } = &change else {
        panic!("{what}: element steps")
    };
    let batch = if grew {
        let (held, grown) = (cache.held_skeleton(), cache.skeleton());
        let handles: BTreeMap<String, Vec<u64>> = netlink::grown_chains(&held, &grown)
            .iter()
            .map(|c| (c.to_string(), socket.rule_handles(family, c).expect("handles")))
            .collect();
        netlink::encode_growth(&held, &grown, &handles, delete, add, socket.next_start())
    } else {
        encode_elements(family, delete, add, socket.next_start())
    };
    let batch = batch.unwrap_or_else(|e| panic!("{what}: encode: {e}"));
    socket
        .apply(&batch)
        .unwrap_or_else(|e| panic!("{what}: {e}\n{}", change.elements_text(family)));
    (change, grew)
}

/// `full` with its first port's endpoints replaced by `n` (an endpoint count no port has).
fn with_new_count(full: &ProxyState, n: u8) -> ProxyState {
    let mut s = full.clone();
    let (name, eps) = full
        .endpoints
        .iter()
        .find(|(_, e)| !e.is_empty())
        .expect("a port with endpoints");
    let many: Vec<Endpoint> = (0..n)
        .map(|k| {
            let ip = match eps[0].ip {
                IpAddr::V4(a) => {
                    let mut o = a.octets();
                    o[3] = 200 + k;
                    IpAddr::from(o)
                }
                IpAddr::V6(a) => {
                    let mut o = a.octets();
                    o[15] = 200 + k;
                    IpAddr::from(o)
                }
            };
            Endpoint { ip, ..eps[0].clone() }
        })
        .collect();
    s.endpoints.insert(name.clone(), many.into());
    s
}

/// A port needing a dispatch rule the table lacks: the table grown in place (new set and rules
/// placed by the kernel's handles, a new bucket chain with them, element steps in the same batch)
/// lists as a fresh load; so does the element step back. `n` past the direct counts: the first
/// count of a bucket adds its chain and the jump to it, the next one a rule in that chain.
/// One growth to check: the new count, the chains it adds (suffixes: the short groups' twins come
/// along) and the held chains whose rules it changes.
struct Growth<'a> {
    n: u8,
    new: &'a [&'a str],
    changed: &'a [&'a str],
}

fn grow(
    tag: &str,
    fam: &str,
    nl: &svcnet_netns::Netns,
    fresh: &svcnet_netns::Netns,
    cache: &mut MapsCache,
    full: &ProxyState,
    Growth { n, new, changed }: Growth<'_>,
) {
    let path = Path::new("/run/netns").join(nl.name());
    update(cache, &with_new_count(full, n));
    assert_eq!(
        cache.peek_change(false),
        MapsChange::Replace,
        "{tag}: a new count needs rules"
    );
    let (held, grown) = (cache.held_skeleton(), cache.skeleton());
    let chains = netlink::grown_chains(&held, &grown);
    // The short groups' twins (`short-dispatch-...`) come along when the port has them.
    let added: Vec<&str> = grown
        .chains
        .iter()
        .map(|c| c.name.as_str())
        .filter(|c| held.chain(c).is_none())
        .collect();
    for want in new {
        assert!(added.contains(want), "{tag}: {n} needs chain {want}: {added:?}");
    }
    assert!(
        added.iter().all(|c| new.iter().any(|w| c.ends_with(w))),
        "{tag}: {n}: only {new:?} are new: {added:?}"
    );
    assert!(
        !chains.is_empty() && chains.iter().all(|c| changed.iter().any(|w| c.ends_with(w))),
        "{tag}: {n} changes rules of {changed:?} only: {chains:?}"
    );
    let mut socket = NftSocket::open_in(&path, Duration::from_secs(10)).expect("netlink socket");
    let mut apply_and_compare = |cache: &mut MapsCache, what: &str, growth: bool| {
        let (change, grew) = apply_step(&format!("{tag}: {what}"), &mut socket, cache);
        assert_eq!(grew, growth, "{tag}: {what}: a growth?");
        cache.commit_change(false, &change);
        load(fresh, &cache.replace_text());
        same(nl, fresh, fam, &format!("{tag}: {what}"));
    };
    apply_and_compare(cache, "the growth", true);
    update(cache, full);
    // The rule for n stays: element steps back.
    apply_and_compare(cache, "the steps back", false);
}

fn golden(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/{name}/input.yaml"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn cfg(family: Family, cluster_cidr: &str) -> RenderConfig {
    RenderConfig {
        family,
        nft_layout: NftLayout::Maps,
        detect_local: DetectLocal::ClusterCidr(vec![cluster_cidr.parse().expect("CIDR")]),
        ..RenderConfig::default()
    }
}

fn node(name: &str, ip: &str) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        ips: vec![ip.parse().expect("address")],
        labels: [("topology.kubernetes.io/zone".to_string(), "z1".to_string())].into(),
        ..Default::default()
    }
}

/// The golden `policies` cluster (IPv4: every traffic policy, affinity, source ranges with the node
/// inside one, external IPs, UDP, SCTP).
#[test]
fn netlink_element_steps_list_as_nft_loads_them_ipv4() {
    let Some((batches, elements, fw)) = run(
        "mapsnl4",
        &golden("policies"),
        node("node-1", "10.140.0.3"),
        cfg(Family::V4, "10.76.0.0/14"),
    ) else {
        return;
    };
    println!("IPv4: {batches} batches, {elements} element steps, {fw} of @fw-allow");
    assert!(fw >= 4, "the source ranges went through netlink: {fw}");
}

/// IPv6: a LoadBalancer with a source range, ETP Local and affinity, and the dual-stack cluster.
#[test]
fn netlink_element_steps_list_as_nft_loads_them_ipv6() {
    let affinity =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nft_maps/affinity6.yaml"))
            .expect("affinity6.yaml");
    let yaml = format!("{affinity}\n---\n{}", golden("dualstack"));
    let Some((batches, elements, fw)) = run(
        "mapsnl6",
        &yaml,
        node("n1", "fd00:140::4"),
        cfg(Family::V6, "fd00:10::/64"),
    ) else {
        return;
    };
    println!("IPv6: {batches} batches, {elements} element steps, {fw} of @fw-allow");
    assert!(fw >= 2, "the source range went through netlink: {fw}");
}
