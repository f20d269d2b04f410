//! Every golden payload is loaded by the real iptables-restore (ip6tables-restore for IPv6) in a
//! throwaway network namespace. The kernel's view (iptables-save) must hold the same chains with the
//! same rule counts, and tracing packets to every service address must give the same outcomes on our
//! payload and on what the kernel saved.

mod common;

use std::collections::BTreeSet;
use std::net::IpAddr;

use svcnet_proxy::trace::{self, Hook, Packet, Proto, TraceOptions};

/// (dst, dport, proto) of every `-d X ... --dport N` rule in nat service dispatch.
fn service_addresses(payload: &str) -> BTreeSet<(IpAddr, u16, String)> {
    let mut out = BTreeSet::new();
    for line in payload
        .lines()
        .filter(|l| l.starts_with("-A KUBE-SERVICES") || l.starts_with("-A KUBE-DST-"))
    {
        let w: Vec<&str> = line.split_whitespace().collect();
        let find = |flag: &str| {
            w.iter()
                .position(|x| *x == flag)
                .and_then(|i| w.get(i + 1))
                .copied()
        };
        if let (Some(d), Some(p), Some(proto)) = (find("-d"), find("--dport"), find("-p"))
            && let (Ok(ip), Ok(port)) = (d.parse(), p.parse())
        {
            out.insert((ip, port, proto.to_string()));
        }
    }
    out
}

#[test]
fn golden_payloads_load_into_real_iptables() {
    let cases = common::golden_cases();
    assert!(!cases.is_empty());
    let mut checked = 0;
    for (_, words, rules) in cases {
        let Some(ns) = common::netns_or_skip("restore") else {
            return;
        };
        let payload = std::fs::read_to_string(&rules).expect("golden payload");
        let v6 = words.iter().any(|w| w == "--ipv6");
        let (restore, save) = if v6 {
            ("ip6tables-restore", "ip6tables-save")
        } else {
            ("iptables-restore", "iptables-save")
        };
        let (ok, _, err) = ns.exec(&[restore, "--test", "--noflush"], &payload);
        assert!(ok, "{restore} --test rejected {}: {err}", rules.display());
        let (ok, _, err) = ns.exec(&[restore, "--noflush", "--counters", "-w", "5"], &payload);
        assert!(ok, "{restore} failed on {}: {err}", rules.display());
        let (ok, saved, err) = ns.exec(&[save], "");
        assert!(ok, "{save}: {err}");

        let ours = trace::parse(&payload).expect("our payload parses");
        let kernel = trace::parse(&saved)
            .unwrap_or_else(|e| panic!("iptables-save output of {}: {e}\n{saved}", rules.display()));
        for table in ["filter", "nat"] {
            for chain in ours.chains(table) {
                assert_eq!(
                    ours.rules(table, chain).len(),
                    kernel.rules(table, chain).len(),
                    "{}: {table} {chain} differs after restore",
                    rules.display()
                );
            }
        }

        let node_ips: Vec<IpAddr> = words
            .windows(2)
            .filter(|w| w[0] == "--node-ip")
            .filter_map(|w| w[1].parse().ok())
            .collect();
        let src: IpAddr = if v6 {
            "2001:db8::10".parse().unwrap()
        } else {
            "203.0.113.10".parse().unwrap()
        };
        for (dst, dport, proto) in service_addresses(&payload) {
            let proto: Proto = proto.parse().expect("proto");
            let packet = Packet {
                src,
                dst,
                dport,
                proto,
                in_iface: Some("eth0".into()),
            };
            let opts = TraceOptions {
                node_ips: node_ips.clone(),
                hook: Hook::Prerouting,
            };
            let a = trace::trace(&ours, &packet, &opts);
            let b = trace::trace(&kernel, &packet, &opts);
            assert!(
                a.same_outcomes(&b, 1e-6),
                "{}: {dst}:{dport} traced differently\nours:\n{a}\nkernel:\n{b}",
                rules.display()
            );
            assert!(
                !a.no_service_rule(),
                "{}: {dst}:{dport} matched no service rule",
                rules.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} addresses traced");
}
