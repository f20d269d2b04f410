//! The wiring functions against the real `ip` tool, between two guards (needs root: SKIPPED outside
//! CI, a failure under CI=true).
#![allow(clippy::unwrap_used)]

use svcnet_netns::{Netns, add, delete, link, list, netns_or_skip};

fn two(tag: &str) -> Option<(Netns, Netns)> {
    let a = netns_or_skip(&format!("{tag}-a"))?;
    let b = Netns::new(&format!("{tag}-b")).unwrap();
    Some((a, b))
}

#[test]
fn veth_joins_two_namespaces_with_both_ends_up_and_addresses() {
    let Some((a, b)) = two("veth") else {
        return;
    };
    link::veth(a.name(), "x0", b.name(), "y0").unwrap();
    link::addr(a.name(), "x0", "10.9.0.1/30").unwrap();
    link::addr(a.name(), "x0", "fd00:9::1/64").unwrap();
    let shown = link::ip(a.name(), &["-o", "addr", "show", "dev", "x0"]).unwrap();
    assert!(shown.contains("inet 10.9.0.1/30"), "{shown}");
    assert!(shown.contains("inet6 fd00:9::1/64"), "{shown}");
    // nodad: usable at once, never tentative (the kernel's own link-local address still is).
    let global = shown.lines().find(|l| l.contains("fd00:9::1")).unwrap();
    assert!(
        global.contains("nodad") && !global.contains("tentative"),
        "{global}"
    );
    for (ns, dev) in [(&a, "x0"), (&b, "y0")] {
        let l = link::ip(ns.name(), &["-o", "link", "show", "dev", dev]).unwrap();
        assert!(l.contains("state UP") || l.contains(",UP"), "{l}");
    }
    // The peer is in `b` only: nothing reached the root namespace.
    let root = svcnet_netns::run(&["ip", "-o", "link", "show"], None)
        .unwrap()
        .stdout;
    assert!(!root.contains(" y0@") && !root.contains(" x0@"), "{root}");
}

#[test]
fn a_veth_pair_may_stay_inside_one_namespace() {
    let Some(a) = netns_or_skip("veth1") else {
        return;
    };
    link::veth(a.name(), "eth0", a.name(), "eth0-peer").unwrap();
    let l = link::ip(a.name(), &["-o", "link", "show"]).unwrap();
    assert!(
        l.contains("eth0@eth0-peer") && l.contains("eth0-peer@eth0"),
        "{l}"
    );
}

#[test]
fn bridge_port_hairpin_routes_and_forwarding() {
    let Some((node, pod)) = two("br") else {
        return;
    };
    let (n, p) = (node.name(), pod.name());
    link::bridge(n, "br0").unwrap();
    link::addr(n, "br0", "10.9.1.1/24").unwrap();
    link::addr(n, "br0", "fd00:9:1::1/64").unwrap();
    link::veth(n, "vp0", p, "eth0").unwrap();
    link::attach(n, "br0", "vp0").unwrap();
    link::hairpin(n, "vp0").unwrap();
    let port = link::ip(n, &["-d", "link", "show", "dev", "vp0"]).unwrap();
    assert!(port.contains("master br0"), "{port}");
    assert!(port.contains("hairpin on"), "{port}");

    link::addr(p, "eth0", "10.9.1.10/24").unwrap();
    link::addr(p, "eth0", "fd00:9:1::10/64").unwrap();
    link::route(p, "default", Some("10.9.1.1"), None).unwrap();
    link::route(p, "default", Some("fd00:9:1::1"), Some("eth0")).unwrap();
    link::route(p, "10.8.0.0/16", None, Some("eth0")).unwrap();
    assert!(link::ip(p, &["route"]).unwrap().contains("default via 10.9.1.1"));
    assert!(
        link::ip(p, &["-6", "route"])
            .unwrap()
            .contains("default via fd00:9:1::1 dev eth0")
    );
    assert!(link::ip(p, &["route"]).unwrap().contains("10.8.0.0/16 dev eth0"));

    link::local_route(n, "10.201.0.0/16", "lo").unwrap();
    let local = link::ip(n, &["route", "show", "table", "local"]).unwrap();
    assert!(local.contains("local 10.201.0.0/16 dev lo"), "{local}");

    link::forward_ipv4(n).unwrap();
    link::forward_ipv6(n).unwrap();
    link::sysctl(n, "net.ipv4.conf.all.rp_filter", "0").unwrap();
    let read = |key: &str| node.ok(&["cat", &format!("/proc/sys/{key}")]);
    assert_eq!(read("net/ipv4/ip_forward"), "1\n");
    assert_eq!(read("net/ipv6/conf/all/forwarding"), "1\n");
    assert_eq!(read("net/ipv4/conf/all/rp_filter"), "0\n");
    // Per namespace: the pod's stayed as it was.
    assert_eq!(pod.ok(&["cat", "/proc/sys/net/ipv4/ip_forward"]), "0\n");
}

#[test]
fn a_failed_step_is_an_error_naming_the_command() {
    let Some(a) = netns_or_skip("linkerr") else {
        return;
    };
    let err = link::attach(a.name(), "no-such-bridge", "lo")
        .unwrap_err()
        .to_string();
    assert!(err.contains("no-such-bridge"), "{err}");
    let err = link::sysctl(a.name(), "net.no.such.key", "1")
        .unwrap_err()
        .to_string();
    assert!(err.contains("no/such/key"), "{err}");
}

#[test]
fn add_makes_an_unguarded_namespace_with_lo_up() {
    // Not a guard's name: the tag carries this process's pid, and the test deletes it itself.
    let name = format!("svcnet-linktest-{}", std::process::id());
    if add(&name).is_err() {
        svcnet_netns::skip_or_panic("cannot create a network namespace (not root?)");
        return;
    }
    let lo = link::ip(&name, &["-o", "link", "show", "dev", "lo"]);
    let listed = list().contains(&name);
    delete(&name);
    let lo = lo.unwrap();
    assert!(listed);
    assert!(lo.contains(",UP"), "{lo}");
    assert!(!list().contains(&name));
    assert!(add("bad/name").is_err());
}
