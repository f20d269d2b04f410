//! Every golden payload is loaded by the real iptables-restore (ip6tables-restore for IPv6) in a
//! throwaway network namespace. The kernel's view (iptables-save) must hold the same chains with the
//! same rule counts, and tracing packets to every service address must give the same outcomes on our
//! payload and on what the kernel saved.

mod common;

use std::collections::BTreeSet;
use std::net::IpAddr;

use svcnet_proxy::offline::trace::{self, Hook, Packet, Proto, TraceOptions};

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
        let Some(ns) = common::netns_with_nfacct("restore") else {
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

/// `n` LoadBalancer services with `eps` endpoints each; services below `skip` are left out.
fn lb_cluster(n: usize, eps: usize, skip: usize) -> svcnet_proxy::iptables::render::Rendered {
    use svcnet_proxy::config::{DetectLocal, RenderConfig};
    use svcnet_proxy::model::{Family, NodeFacts, ProxyState};
    let mut y = String::new();
    for i in skip..n {
        y += &format!(
            "---\nkind: Service\nmetadata: {{name: b{i}, namespace: default}}\nspec: {{type: LoadBalancer, clusterIP: 10.0.{}.{}, ports: [{{port: 80, nodePort: {}}}]}}\nstatus: {{loadBalancer: {{ingress: [{{ip: 198.51.100.{}}}]}}}}\n---\nkind: EndpointSlice\nmetadata: {{name: b{i}-x, namespace: default, labels: {{kubernetes.io/service-name: b{i}}}}}\naddressType: IPv4\nports: [{{port: 80, protocol: TCP}}]\nendpoints:\n",
            i / 250,
            i % 250 + 1,
            30000 + i,
            i % 250 + 1
        );
        for e in 0..eps {
            y += &format!(
                "- {{addresses: [10.76.{}.{}], conditions: {{ready: true}}, nodeName: node-1}}\n",
                i % 200,
                e + 1
            );
        }
    }
    let objs = svcnet_proxy::offline::input::parse_objects(&y).expect("yaml");
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, Family::V4);
    let node = NodeFacts {
        name: "node-1".into(),
        ips: vec!["10.140.0.2".parse().expect("ip")],
        ..Default::default()
    };
    let cfg = RenderConfig {
        detect_local: DetectLocal::ClusterCidr(vec!["10.76.0.0/14".parse().expect("cidr")]),
        ..Default::default()
    };
    svcnet_proxy::iptables::render::render(&state, &node, &cfg)
}

/// The kernel's ruleset without counters, sorted (chain order in iptables-save is creation order).
fn saved_sorted(ns: &svcnet_netns::Netns) -> Vec<String> {
    let (ok, saved, err) = ns.exec(&["iptables-save"], "");
    assert!(ok, "iptables-save: {err}");
    let mut lines: Vec<String> = saved
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| match l.strip_prefix(':') {
            Some(decl) => decl.split_whitespace().next().unwrap_or_default().to_string(),
            None => l.to_string(),
        })
        .collect();
    lines.sort();
    lines
}

fn restore_each(ns: &svcnet_netns::Netns, texts: &[String]) {
    for (i, t) in texts.iter().enumerate() {
        let (ok, _, err) = ns.exec(&["iptables-restore", "--noflush", "--counters", "-w", "5"], t);
        assert!(ok, "payload {i} of {} failed: {err}\n{t}", texts.len());
    }
}

/// A sync written in batches (the daemon's large-sync path) leaves the kernel exactly as the same sync
/// in one call: first a full sync, then a partial sync that deletes services and changes the rest.
#[test]
fn batched_syncs_equal_one_call_in_the_kernel() {
    use svcnet_proxy::config::RenderConfig;
    use svcnet_proxy::iptables::render::{FullOptions, UNBATCHED};
    let (Some(batched), Some(single)) = (
        common::netns_with_nfacct("batch-a"),
        common::netns_with_nfacct("batch-b"),
    ) else {
        return;
    };
    let cfg = RenderConfig::default();
    let opts = FullOptions {
        canaries: true,
        jumps: true,
        ..Default::default()
    };
    let before = lb_cluster(60, 3, 0);
    let full = before.full_payloads(&opts, &cfg, 20);
    assert!(full.texts.len() > 5, "{} payloads", full.texts.len());
    restore_each(&batched, &full.texts);
    restore_each(&single, &before.full_payloads(&opts, &cfg, UNBATCHED).texts);
    assert_eq!(saved_sorted(&batched), saved_sorted(&single), "full sync");

    let after = lb_cluster(60, 4, 25);
    let partial = after.partial_payloads(&before.digests(), 20).expect("a change");
    assert!(partial.texts.len() > 3, "{} payloads", partial.texts.len());
    restore_each(&batched, &partial.texts);
    let one = after
        .partial_payloads(&before.digests(), UNBATCHED)
        .expect("a change");
    assert_eq!(one.texts.len(), 1);
    restore_each(&single, &one.texts);
    let kernel = saved_sorted(&batched);
    assert_eq!(kernel, saved_sorted(&single), "partial sync");
    assert!(
        !kernel
            .iter()
            .any(|l| l.contains("\"default/b3\"") || l.contains("default/b3 ")),
        "a deleted service's rules are still in the kernel"
    );
    assert!(kernel.iter().any(|l| l.contains("default/b30")));
}
