//! Property tests over random clusters, hostile strings included (names, port names, source ranges,
//! annotations). For every generated cluster:
//! - the payload parses (our tracer, and the real iptables-restore --test in a throwaway namespace);
//! - no hostile input text appears in the payload and every rule's quotes are balanced;
//! - `trace` gives the same outcomes on the flat and the tree layout for packets to every address,
//!   and on the nftables mode's table (issue 18: the two modes treat every packet alike);
//! - the nftables `maps` layout's table (issue 32) gives every packet exactly the upstream nftables
//!   layout's outcomes (so, through it, the iptables layouts' too), with no tracer warning.

mod common;

use std::net::IpAddr;

use common::generator::{HOSTILE, Svc, objects, svc};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use svcnet_proxy::config::{DetectLocal, Layout, NftLayout, RenderConfig};
use svcnet_proxy::iptables::render::{FullOptions, render};
use svcnet_proxy::model::{Family, NodeFacts, ProxyState};
use svcnet_proxy::offline::trace::{self, Hook, Packet, Proto, TraceOptions};

fn check(svcs: &[Svc], ns: Option<&svcnet_netns::Netns>) -> Result<(), TestCaseError> {
    let (services, slices) = objects(svcs);
    let state = ProxyState::from_k8s(&services, &slices, Family::V4);
    let mut node = NodeFacts {
        name: "node-1".into(),
        ips: vec!["10.140.0.3".parse().expect("literal address")],
        ..Default::default()
    };
    node.labels
        .insert("topology.kubernetes.io/zone".into(), "z1".into());
    let base = RenderConfig {
        detect_local: DetectLocal::ClusterCidr(vec!["10.76.0.0/14".parse().expect("literal address")]),
        tree_leaf_max: 2,
        ..RenderConfig::default()
    };
    let opts = FullOptions {
        jumps: true,
        ..Default::default()
    };
    let mut parsed = Vec::new();
    for layout in [Layout::Flat, Layout::Tree] {
        let cfg = RenderConfig {
            layout,
            ..base.clone()
        };
        let payload = render(&state, &node, &cfg).payload(&opts, &cfg).0;
        for h in HOSTILE {
            prop_assert!(!payload.contains(h), "hostile text {h:?} reached the payload");
        }
        for line in payload.lines() {
            prop_assert!(line.matches('"').count() % 2 == 0, "unbalanced quotes: {line}");
        }
        let rs = trace::parse(&payload).map_err(|e| TestCaseError::fail(format!("{e}\n{payload}")))?;
        if let Some(ns) = ns {
            let (ok, _, err) = ns.exec(&["iptables-restore", "--test", "--noflush"], &payload);
            prop_assert!(
                ok,
                "iptables-restore --test rejected the payload: {err}\n{payload}"
            );
        }
        parsed.push(rs);
    }

    let nft_text = svcnet_proxy::nftables::render::render(&state, &node, &base).text();
    for h in HOSTILE {
        prop_assert!(
            !nft_text.contains(h),
            "hostile text {h:?} reached the nftables table"
        );
    }
    let nft_rules =
        trace::nft::parse(&nft_text).map_err(|e| TestCaseError::fail(format!("{e}\n{nft_text}")))?;
    let maps_cfg = RenderConfig {
        nft_layout: NftLayout::Maps,
        ..base.clone()
    };
    let maps_text = svcnet_proxy::nftables::render::maps::render(&state, &node, &maps_cfg).text();
    for h in HOSTILE {
        prop_assert!(
            !maps_text.contains(h),
            "hostile text {h:?} reached the maps table"
        );
    }
    let maps_rules =
        trace::nft::parse(&maps_text).map_err(|e| TestCaseError::fail(format!("{e}\n{maps_text}")))?;

    let outside: IpAddr = "203.0.113.10".parse().expect("literal address");
    let pod: IpAddr = "10.76.1.200".parse().expect("literal address");
    let allowed: IpAddr = "192.168.1.1".parse().expect("literal address");
    for svc in state.services.values() {
        let proto = if svc.name.protocol.as_str() == "udp" {
            Proto::Udp
        } else {
            Proto::Tcp
        };
        let mut dsts = vec![(svc.cluster_ip, svc.port)];
        dsts.extend(svc.load_balancer_vips.iter().map(|ip| (*ip, svc.port)));
        dsts.extend(svc.external_ips.iter().map(|ip| (*ip, svc.port)));
        if let Some(np) = svc.node_port {
            dsts.push((node.ips[0], np));
        }
        for (dst, dport) in dsts {
            for src in [outside, pod, allowed] {
                let p = Packet {
                    src,
                    dst,
                    dport,
                    proto,
                    in_iface: Some("eth0".into()),
                };
                let o = TraceOptions {
                    node_ips: node.ips.clone(),
                    hook: Hook::Prerouting,
                };
                let flat = trace::trace(&parsed[0], &p, &o);
                let tree = trace::trace(&parsed[1], &p, &o);
                prop_assert!(
                    flat.same_outcomes(&tree, 1e-9),
                    "flat vs tree for {src} -> {dst}:{dport}\nflat:\n{flat}\ntree:\n{tree}"
                );
                let nft = trace::nft::trace(&nft_rules, &p, &o);
                prop_assert!(
                    nft.warnings.is_empty(),
                    "nftables tracer warnings: {:?}\n{nft_text}",
                    nft.warnings
                );
                let maps = trace::nft::trace(&maps_rules, &p, &o);
                prop_assert!(
                    maps.warnings.is_empty(),
                    "maps tracer warnings: {:?}\n{maps_text}",
                    maps.warnings
                );
                prop_assert!(
                    nft.same_outcomes(&maps, 1e-9),
                    "upstream vs maps layout for {src} -> {dst}:{dport}\nupstream:\n{nft}\nmaps:\n{maps}\n{maps_text}"
                );
                if src == outside {
                    // From the node itself (nat output): ETP Local's local-origin short circuit.
                    let from_node = Packet {
                        src: node.ips[0],
                        in_iface: None,
                        ..p.clone()
                    };
                    let o = TraceOptions {
                        hook: Hook::Output,
                        ..o.clone()
                    };
                    let nft = trace::nft::trace(&nft_rules, &from_node, &o);
                    let maps = trace::nft::trace(&maps_rules, &from_node, &o);
                    prop_assert!(
                        maps.warnings.is_empty() && nft.same_outcomes(&maps, 1e-9),
                        "upstream vs maps layout from the node to {dst}:{dport}\nupstream:\n{nft}\nmaps:\n{maps}\n{maps_text}"
                    );
                }
                // Every destination here is a Service's: each mode's trace must say a service rule matched.
                for (mode, t) in [("iptables", &flat), ("nftables", &nft), ("maps", &maps)] {
                    prop_assert!(
                        !t.no_service_rule(),
                        "{mode}: no service rule for {src} -> {dst}:{dport}\n{t}"
                    );
                }
                prop_assert!(
                    flat.same_outcomes(&nft, 1e-9) || upstream_mode_delta(&flat, &nft),
                    "iptables vs nftables for {src} -> {dst}:{dport}\niptables:\n{flat}\nnftables:\n{nft}"
                );
            }
        }
    }
    Ok(())
}

/// Where upstream's two modes differ on purpose (each case read in pkg/proxy/nftables/proxier.go):
/// the nftables mode checks loadBalancerSourceRanges at `filter-prerouting-pre-dnat`, before anything
/// else, so a disallowed client of a Service without endpoints is dropped there, where the iptables
/// mode rejects it for having no endpoints.
fn upstream_mode_delta(iptables: &trace::Trace, nft: &trace::Trace) -> bool {
    let only =
        |t: &trace::Trace, v: trace::Verdict| t.summary().len() == 1 && t.probability_of(v) > 1.0 - 1e-9;
    only(iptables, trace::Verdict::Reject)
        && only(nft, trace::Verdict::Drop)
        && nft.outcomes[0]
            .steps
            .iter()
            .any(|s| s.chain.starts_with("firewall-") && s.chain.contains('/'))
}

#[test]
fn random_clusters_render_safely_and_layouts_agree() {
    let ns = common::netns_with_nfacct("props");
    let cases = std::env::var("SVCNET_PROP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let result = runner.run(&prop::collection::vec(svc(), 1..14), |svcs| {
        check(&svcs, ns.as_ref())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
