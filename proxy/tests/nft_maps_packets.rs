//! Real connections through the nftables mode's two layouts (issue 32), in throwaway network
//! namespaces (never the root one): a ClusterIP with two endpoints on `lo`, rendered by `svcnet-proxy
//! render` in the `upstream` and the `maps` layout and loaded with `nft -f`; `nft_maps/probe.py`
//! connects and records which endpoint accepted and from which source address.
//!
//! Addresses on `lo`: 10.128.0.100/24 first (the primary: what masquerade picks towards an
//! endpoint), the endpoints 10.128.0.1 and .2 in the cluster CIDR 10.128.0.0/16, a client outside it
//! (192.0.2.9, and 192.0.2.10 for a second client); 10.96.0.0/12 is routed to `lo`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;
use serde_json::Value;
use svcnet_proxy::cli::{Cli, Command};
use svcnet_proxy::config::{DetectLocal, NftLayout, RenderConfig};
use svcnet_proxy::model::{Family, NodeFacts, ProxyState};
use svcnet_proxy::nftables::netlink;
use svcnet_proxy::nftables::render::maps::{MapsCache, MapsChange, nft_loadable};
use svcnet_proxy::nftables::socket::NftSocket;
use svcnet_proxy::offline::run_render;

const OUTSIDE: &str = "192.0.2.9";
const POD: &str = "10.128.0.1";
const MASQ_SOURCE: &str = "10.128.0.100";
const CONNECTS: u64 = 200;
/// `render`'s `--node-ip`: the node-port address.
const NODE_IP: &str = "10.140.0.2";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nft_maps")
}

fn render(layout: &str) -> String {
    render_file(layout, "input.yaml")
}

fn render_file(layout: &str, file: &str) -> String {
    let input = dir().join(file);
    let argv = [
        "svcnet-proxy",
        "render",
        "-f",
        input.to_str().expect("utf-8 path"),
        "--proxy-mode",
        "nftables",
        "--nftables-layout",
        layout,
        "--cluster-cidr",
        "10.128.0.0/16",
        "--node-name",
        "n1",
        "--node-ip",
        NODE_IP,
    ];
    let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{e}"));
    let Command::Render(args) = cli.command else {
        panic!("not render")
    };
    run_render(&args).unwrap_or_else(|e| panic!("{e:#}"))
}

/// A namespace with the addresses and route of the module doc; None when namespaces are unavailable.
fn namespace(tag: &str) -> Option<svcnet_netns::Netns> {
    let ns = svcnet_netns::netns_or_skip(tag)?;
    for a in [
        "10.128.0.100/24",
        "10.128.0.1/24",
        "10.128.0.2/24",
        "192.0.2.9/32",
        "192.0.2.10/32",
    ] {
        ns.ok(&["ip", "addr", "add", a, "dev", "lo"]);
    }
    ns.ok(&["ip", "route", "add", "10.96.0.0/12", "dev", "lo"]);
    Some(ns)
}

fn load(ns: &svcnet_netns::Netns, text: &str) {
    let (ok, _, err) = ns.exec(&["nft", "-f", "-"], text);
    assert!(ok, "nft -f: {err}");
}

fn probe(ns: &svcnet_netns::Netns, args: &[&str]) -> Value {
    let script = dir().join("probe.py");
    let mut all = vec!["python3", script.to_str().expect("utf-8 path")];
    all.extend(args);
    let out = ns.ok(&all);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// `endpoint from peer` -> connections, for one source.
fn counts(v: &Value, src: &str) -> BTreeMap<String, u64> {
    v[src]
        .as_object()
        .unwrap_or_else(|| panic!("no {src} in {v}"))
        .iter()
        .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or_default()))
        .collect()
}

/// Each of two endpoints gets its share: 200 fair draws land in 60..=140 (> 5 sd from 100).
fn fair(n: u64) -> bool {
    (60..=140).contains(&n)
}

#[test]
fn both_layouts_balance_masquerade_and_hairpin_real_connections() {
    for layout in ["upstream", "maps"] {
        let Some(ns) = namespace("mapspkt") else {
            return;
        };
        load(&ns, &render(layout));
        let n = CONNECTS.to_string();
        let v = probe(&ns, &["counts", &n, OUTSIDE, POD]);
        let outside = counts(&v, OUTSIDE);
        let pod = counts(&v, POD);
        let got = |m: &BTreeMap<String, u64>, k: &str| m.get(k).copied().unwrap_or_default();
        // From outside the cluster CIDR: masqueraded, to either endpoint.
        let (o1, o2) = (
            got(&outside, &format!("10.128.0.1 from {MASQ_SOURCE}")),
            got(&outside, &format!("10.128.0.2 from {MASQ_SOURCE}")),
        );
        assert_eq!(got(&outside, "connected"), CONNECTS, "{layout}: {v}");
        assert!(o1 + o2 == CONNECTS && fair(o1) && fair(o2), "{layout}: {v}");
        // From a pod: the source is kept, except when the pod is sent to itself (hairpin).
        let (hairpin, kept) = (
            got(&pod, &format!("10.128.0.1 from {MASQ_SOURCE}")),
            got(&pod, &format!("10.128.0.2 from {POD}")),
        );
        assert!(
            hairpin + kept == CONNECTS && fair(hairpin) && fair(kept),
            "{layout}: {v}"
        );
        println!("{layout}: {v}");
    }
}

/// A Service with more endpoints than the maps layout's direct counts (20: its rule in the inner
/// bucket's chain `dispatch-17-24`, reached through `services`' jump to the outer bucket's
/// `dispatch-17-80` and its jump): real connections reach every one of
/// its endpoints in both layouts (400 draws of 1 in 20 miss one endpoint with odds ~2e-8).
#[test]
fn a_service_past_the_direct_counts_reaches_every_endpoint() {
    const EPS: usize = 20;
    for layout in ["upstream", "maps"] {
        let Some(ns) = namespace("mapsmany") else {
            return;
        };
        for i in 1..=EPS {
            ns.ok(&["ip", "addr", "add", &format!("10.128.1.{i}/24"), "dev", "lo"]);
        }
        let text = render_file(layout, "many.yaml");
        if layout == "maps" {
            assert!(
                text.contains("@svcs-17-80 jump dispatch-17-80")
                    && text.contains("@svcs-17-24 jump dispatch-17-24"),
                "the maps layout reaches 20 endpoints through its buckets:\n{text}"
            );
        }
        load(&ns, &text);
        let v = probe(&ns, &["spread", "400", &EPS.to_string(), OUTSIDE]);
        let got = counts(&v, OUTSIDE);
        assert_eq!(got.get("connected").copied(), Some(400), "{layout}: {v}");
        for i in 1..=EPS {
            let ep = format!("10.128.1.{i} from ");
            let hits: u64 = got
                .iter()
                .filter(|(k, _)| k.starts_with(&ep))
                .map(|(_, n)| n)
                .sum();
            assert!(hits > 0, "{layout}: endpoint 10.128.1.{i} never chosen: {v}");
        }
    }
}

/// A layout switch is one transaction (the table deleted and declared again in the same batch):
/// connections made all the while never fail, and each layout's objects are gone after the switch.
#[test]
fn switching_layouts_leaves_no_gap_and_no_leftovers() {
    let Some(ns) = namespace("mapsswitch") else {
        return;
    };
    let (upstream, maps) = (render("upstream"), render("maps"));
    let switch = |text: &str| format!("add table ip kube-proxy\ndelete table ip kube-proxy\n{text}");
    load(&ns, &upstream);
    let child = ns
        .command(&[
            "python3",
            dir().join("probe.py").to_str().expect("utf-8 path"),
            "loop",
            "3",
            OUTSIDE,
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start probe.py");
    for i in 0..12 {
        std::thread::sleep(Duration::from_millis(200));
        load(&ns, &switch(if i % 2 == 0 { &maps } else { &upstream }));
    }
    let out = child.wait_with_output().expect("probe.py");
    let v: Value = serde_json::from_slice(&out.stdout).expect("probe output");
    println!("connections during 12 switches: {v}");
    assert_eq!(v["failed"], 0, "{v}");
    assert!(v["ok"].as_u64().unwrap_or_default() > 50, "{v}");

    // The last switch went to upstream's table: none of the maps layout's objects are left.
    let listing = ns.ok(&["nft", "list", "table", "ip", "kube-proxy"]);
    // Upstream's per-service chains carry the port's name (`service-<hash>-default/a/tcp/`).
    assert!(listing.contains("default/a/tcp"), "{listing}");
    assert!(
        !listing.contains("map eps") && !listing.contains("set svcs-"),
        "{listing}"
    );
    load(&ns, &switch(&maps));
    let listing = ns.ok(&["nft", "list", "table", "ip", "kube-proxy"]);
    assert!(
        listing.contains("map eps-2") && listing.contains("set svcs-2"),
        "{listing}"
    );
    assert!(
        !listing.contains("default/a") && !listing.contains("chain endpoint-"),
        "{listing}"
    );
    assert!(!listing.contains("service-ips"), "{listing}");
}

/// The element-only transaction (`maps::change`) takes the kernel's table to exactly what loading the
/// new table from scratch gives, and loads as one `nft -f` transaction.
#[test]
fn element_transactions_reach_a_fresh_load() {
    use svcnet_proxy::config::{DetectLocal, NftLayout, RenderConfig};
    use svcnet_proxy::model::{Family, NodeFacts, ProxyState};
    use svcnet_proxy::nftables::render::maps;

    let base = std::fs::read_to_string(dir().join("input.yaml")).expect("input.yaml");
    let cfg = RenderConfig {
        nft_layout: NftLayout::Maps,
        detect_local: DetectLocal::ClusterCidr(vec!["10.128.0.0/16".parse().expect("CIDR")]),
        ..RenderConfig::default()
    };
    let node = NodeFacts {
        name: "n1".into(),
        ips: vec!["10.140.0.2".parse().expect("address")],
        ..Default::default()
    };
    let table = |yaml: &str| {
        let objs = svcnet_proxy::offline::input::parse_objects(yaml).expect("yaml");
        let state = ProxyState::from_k8s(&objs.services, &objs.slices, Family::V4);
        maps::render(&state, &node, &cfg)
    };
    let second = base
        .replace("name: a", "name: b")
        .replace("10.96.0.1", "10.96.0.2");
    let steps = [
        base.clone(),
        base.replace("10.128.0.2", "10.128.0.3"),
        format!("{}\n{}", base.replace("10.128.0.2", "10.128.0.3"), second),
        base.clone(),
    ];
    let (Some(ns), Some(fresh)) = (namespace("mapsdiff"), namespace("mapsfresh")) else {
        return;
    };
    let mut held = table(&steps[0]);
    load(&ns, &held.text());
    for yaml in &steps[1..] {
        let next = table(yaml);
        let c = maps::change(&held, &next);
        assert!(matches!(c, maps::MapsChange::Elements { .. }), "{c:?}");
        load(&ns, &c.text(&next));
        load(
            &fresh,
            &format!(
                "add table ip kube-proxy\ndelete table ip kube-proxy\n{}",
                next.text()
            ),
        );
        assert_eq!(common::nft_listing(&ns, "ip"), common::nft_listing(&fresh, "ip"));
        held = next;
    }
}

/// ClientIP affinity (`nft_maps/affinity.yaml`): every connection of a client goes to the endpoint
/// its first one was sent to, in both layouts (two clients, 50 connects each).
#[test]
fn both_layouts_keep_a_client_on_one_endpoint_with_affinity() {
    for layout in ["upstream", "maps"] {
        let Some(ns) = namespace("mapsaff") else {
            return;
        };
        load(&ns, &render_file(layout, "affinity.yaml"));
        let v = probe(&ns, &["counts", "50", OUTSIDE, "192.0.2.10"]);
        println!("{layout}: {v}");
        for client in [OUTSIDE, "192.0.2.10"] {
            let c = counts(&v, client);
            let landed: Vec<_> = c.iter().filter(|(k, _)| k.as_str() != "connected").collect();
            assert_eq!(c.get("connected"), Some(&50), "{layout}: {v}");
            assert!(landed.len() == 1 && *landed[0].1 == 50, "{layout} {client}: {v}");
        }
    }
}

/// ClientIP affinity is per Service port, as upstream's per-endpoint sets are: eight clients each
/// connect to the cluster IP, then to the node port (on the node IP, put on `lo`), and every connection of
/// a client lands on one endpoint, in both layouts. Remembered per destination key instead, each
/// client's node-port connections would be drawn afresh (all eight alike by chance: 1 in 256).
#[test]
fn both_layouts_remember_a_client_across_the_ports_keys() {
    let clients: Vec<String> = (11..19).map(|i| format!("192.0.2.{i}")).collect();
    for layout in ["upstream", "maps"] {
        let Some(ns) = namespace("mapsport") else {
            return;
        };
        for a in clients.iter().map(String::as_str).chain([NODE_IP]) {
            ns.ok(&["ip", "addr", "add", &format!("{a}/32"), "dev", "lo"]);
        }
        load(&ns, &render_file(layout, "affinity.yaml"));
        let mut args = vec!["counts", "5"];
        args.extend(clients.iter().map(String::as_str));
        let first = probe(&ns, &args);
        let mut args = vec!["via", NODE_IP, "30080", "5"];
        args.extend(clients.iter().map(String::as_str));
        let then = probe(&ns, &args);
        for c in &clients {
            let landed = |v: &Value| -> BTreeMap<String, u64> {
                let mut m = counts(v, c);
                assert_eq!(m.remove("connected"), Some(5), "{layout} {c}: {v}");
                m.into_iter()
                    .map(|(k, n)| (k.split(' ').next().unwrap_or_default().to_string(), n))
                    .collect()
            };
            let (a, b) = (landed(&first), landed(&then));
            assert!(
                a.len() == 1 && a == b,
                "{layout} {c}: cluster IP {a:?}, node port {b:?}"
            );
        }
    }
}

/// IPv6 ClientIP affinity (`nft_maps/affinity6.yaml`: a LoadBalancer with source ranges, ETP Local
/// and affinity) through svcnet's netlink writer, which encodes the record rules nft 1.0.6 aborts on:
/// nft lists them back, and every connection of a client goes to the endpoint its first one was sent
/// to (two clients, 50 connects each, to the cluster IP). The `nft -f` fallback's text leaves exactly
/// those rules out and loads.
#[test]
fn ipv6_affinity_through_netlink_keeps_a_client_on_one_endpoint() {
    let yaml = std::fs::read_to_string(dir().join("affinity6.yaml")).expect("affinity6.yaml");
    let cfg = RenderConfig {
        family: Family::V6,
        nft_layout: NftLayout::Maps,
        detect_local: DetectLocal::ClusterCidr(vec!["fd00:10::/64".parse().expect("CIDR")]),
        ..RenderConfig::default()
    };
    let node = NodeFacts {
        name: "n1".into(),
        ips: vec!["2001:db8::1".parse().expect("address")],
        ..Default::default()
    };
    let objs = svcnet_proxy::offline::input::parse_objects(&yaml).expect("yaml");
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, Family::V6);
    let mut cache = MapsCache::new(node, cfg);
    for (name, svc) in &state.services {
        cache.set_port(name, Some((svc.clone(), state.endpoints.get(name).cloned())));
    }
    assert_eq!(cache.take_change(true), MapsChange::Replace);
    let text = cache.replace_text();
    let records = text.lines().filter(|l| l.contains(" update @")).count();
    assert_eq!(
        records,
        cache.stickies().count(),
        "a record rule per affinity port:\n{text}"
    );
    assert!(records >= 1, "{text}");
    let (loadable, left_out) = nft_loadable(&text);
    assert_eq!(left_out, records, "{loadable}");
    let Some(ns) = svcnet_netns::netns_or_skip("maps6aff") else {
        return;
    };
    for a in [
        "fd00:10::100/64",
        "fd00:10::1/64",
        "fd00:10::2/64",
        "2001:db8:9::9/128",
        "2001:db8:9::10/128",
    ] {
        ns.ok(&["ip", "-6", "addr", "add", a, "dev", "lo", "nodad"]);
    }
    ns.ok(&["ip", "-6", "route", "add", "fd00::/112", "dev", "lo"]);
    load(&ns, &loadable);
    let path = Path::new("/run/netns").join(ns.name());
    let mut socket = NftSocket::open_in(&path, Duration::from_secs(10)).expect("netlink socket");
    // Over the fallback's table: the replacement keeps its hooked chains.
    let kernel = socket.table_objects(Family::V6).expect("the table's objects");
    assert!(kernel.is_some(), "the fallback's table is there");
    let batch = netlink::encode_replacement(
        &cache.skeleton(),
        cache.elements(),
        &[],
        kernel.as_ref(),
        socket.next_start(),
    )
    .expect("the netlink encoder writes IPv6 record rules");
    socket.apply(&batch).unwrap_or_else(|e| panic!("{e}"));
    let listing = ns.ok(&["nft", "list", "table", "ip6", "kube-proxy"]);
    let map = cache.stickies().next().expect("an affinity port").map();
    assert!(
        listing.contains(&format!(
            "update @{map} {{ ip6 saddr timeout 3h : ip6 daddr . tcp dport }}"
        )),
        "{listing}"
    );
    let v = probe(&ns, &["counts", "50", "2001:db8:9::9", "2001:db8:9::10"]);
    println!("{v}");
    for client in ["2001:db8:9::9", "2001:db8:9::10"] {
        let c = counts(&v, client);
        let landed: Vec<_> = c.iter().filter(|(k, _)| k.as_str() != "connected").collect();
        assert_eq!(c.get("connected"), Some(&50), "{v}");
        assert!(landed.len() == 1 && *landed[0].1 == 50, "{client}: {v}");
    }
    let entries = ns.ok(&["nft", "list", "map", "ip6", "kube-proxy", &map]);
    assert!(entries.contains("2001:db8:9::9 "), "{entries}");
}

/// `trace` reads the maps layout from a node as well: the kernel's listing of the loaded table
/// (`nft list table`) gives every packet the same outcomes as the rendered text (the golden
/// `policies` cluster: ETP Local, source ranges, node ports, no-endpoint services).
#[test]
fn trace_reads_the_kernels_listing_alike() {
    use svcnet_proxy::offline::trace::{self, Hook, Packet, Proto, TraceOptions};

    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/policies/input.yaml");
    let argv = [
        "svcnet-proxy",
        "render",
        "-f",
        input.to_str().expect("utf-8 path"),
        "--proxy-mode",
        "nftables",
        "--nftables-layout",
        "maps",
        "--cluster-cidr",
        "10.76.0.0/14",
        "--node-name",
        "node-1",
    ];
    let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{e}"));
    let Command::Render(args) = cli.command else {
        panic!("not render")
    };
    let text = run_render(&args).unwrap_or_else(|e| panic!("{e:#}"));
    let Some(ns) = svcnet_netns::netns_or_skip("mapslist") else {
        return;
    };
    load(&ns, &text);
    let listing = ns.ok(&["nft", "list", "table", "ip", "kube-proxy"]);
    let (rendered, listed) = (
        trace::nft::parse(&text).expect("render parses"),
        trace::nft::parse(&listing).expect("listing parses"),
    );
    let node_ip: std::net::IpAddr = "10.140.0.3".parse().expect("address");
    let mut dsts: Vec<(String, u16)> = Vec::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("add element ip kube-proxy "))
    {
        let words: Vec<&str> = line.split_whitespace().collect();
        match (words[4], &words[6..]) {
            ("cluster-ips", [ip, ..]) => dsts.extend([80, 443, 9999].map(|p| (ip.to_string(), p))),
            (set, [_, ".", port, "}"]) if set.starts_with("np-") => {
                dsts.push((node_ip.to_string(), port.parse().expect("port")))
            }
            _ => {}
        }
    }
    assert!(dsts.len() > 20, "{dsts:?}");
    for (dst, dport) in dsts {
        for (src, iface) in [
            ("203.0.113.10", "eth0"),
            ("10.76.1.200", "cbr0"),
            ("192.168.1.1", "eth0"),
        ] {
            let p = Packet {
                src: src.parse().expect("address"),
                dst: dst.parse().expect("address"),
                dport,
                proto: Proto::Tcp,
                in_iface: Some(iface.into()),
            };
            let o = TraceOptions {
                node_ips: vec![node_ip],
                hook: Hook::Prerouting,
            };
            let (a, b) = (
                trace::nft::trace(&rendered, &p, &o),
                trace::nft::trace(&listed, &p, &o),
            );
            assert!(
                a.warnings.is_empty() && b.warnings.is_empty(),
                "{:?} {:?}",
                a.warnings,
                b.warnings
            );
            assert!(
                a.same_outcomes(&b, 1e-9),
                "{src} -> {dst}:{dport}\nrender:\n{a}\nlisting:\n{b}\n{listing}"
            );
        }
    }
}
