//! Batched payloads: same lines as one payload, whole services per batch, every jump target declared
//! no later than the payload that uses it, shared chains and deletions last.

use std::collections::{BTreeSet, HashSet};

use super::*;
use crate::config::Layout;
use crate::iptables::render::render;
use crate::model::{Family, ProxyState};
use crate::offline::input::parse_objects;

use crate::fixtures::{cfg, node};

/// `n` LoadBalancer services (KUBE-SVC, EXT, FW and SEP chains each), `eps` endpoints each; services
/// below `skip` are left out (to make a later state with deletions).
fn cluster(n: usize, eps: usize, skip: usize, layout: Layout) -> Rendered {
    let mut y = String::new();
    for i in skip..n {
        y += &format!(
            "---\nkind: Service\nmetadata: {{name: s{i}, namespace: default}}\nspec: {{type: LoadBalancer, clusterIP: 10.0.{}.{}, loadBalancerSourceRanges: [203.0.113.0/24], ports: [{{port: 80, nodePort: {}}}]}}\nstatus: {{loadBalancer: {{ingress: [{{ip: 198.51.100.{}}}]}}}}\n",
            i / 250,
            i % 250 + 1,
            30000 + i,
            i % 250 + 1
        );
        y += &format!(
            "---\nkind: EndpointSlice\nmetadata: {{name: s{i}-x, namespace: default, labels: {{kubernetes.io/service-name: s{i}}}}}\naddressType: IPv4\nports: [{{port: 80, protocol: TCP}}]\nendpoints:\n"
        );
        for e in 0..eps {
            y += &format!(
                "- {{addresses: [10.76.{}.{}], conditions: {{ready: true}}, nodeName: node-1}}\n",
                i % 200,
                e + 1
            );
        }
    }
    let objs = parse_objects(&y).expect("yaml");
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, Family::V4);
    assert!(state.errors.is_empty(), "{:?}", state.errors);
    render(&state, &node(), &cfg(layout))
}

fn body_lines(text: &str) -> Vec<String> {
    let mut table = "";
    let mut out = Vec::new();
    for l in text.lines() {
        if let Some(t) = l.strip_prefix('*') {
            table = t;
        } else if l != "COMMIT" {
            out.push(format!("{table} {l}"));
        }
    }
    out.sort();
    out
}

fn declared(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix(':'))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

fn jump_targets(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("-A "))
        .filter_map(|l| l.split(" -j ").nth(1))
        .filter_map(|t| t.split_whitespace().next())
        .filter(|t| t.starts_with("KUBE-"))
        .map(str::to_string)
        .collect()
}

/// The invariants every batched payload list must keep.
/// `existing`: the chains the kernel already holds.
fn check_batches(r: &Rendered, existing: &[String], batches: &Payloads, single: &str, max: usize) {
    assert_eq!(
        body_lines(&batches.joined()),
        body_lines(single),
        "batches change the ruleset"
    );
    let mut seen: HashSet<String> = existing.iter().cloned().collect();
    for (i, text) in batches.texts.iter().enumerate() {
        seen.extend(declared(text));
        for t in jump_targets(text) {
            assert!(
                seen.contains(&t),
                "payload {i} jumps to {t} before it is declared:\n{text}"
            );
        }
        let last = i + 1 == batches.texts.len();
        if !last {
            assert!(!text.contains("-X "), "deletion before the last payload:\n{text}");
            assert!(!text.contains("*filter"), "filter before the last payload");
            assert!(
                !text.contains(":KUBE-SERVICES "),
                "KUBE-SERVICES before the last payload"
            );
            assert!(!text.contains(":KUBE-DST-"), "dispatch before the last payload");
            // A batch holds whole services; it passes `max` only by the last service it took.
            let biggest = r.owners().values().map(Vec::len).max().unwrap_or(0);
            assert!(declared(text).len() < max + biggest, "batch {i} too big");
        }
    }
    for chains in r.owners().values() {
        let holders: BTreeSet<usize> = batches
            .texts
            .iter()
            .enumerate()
            .filter(|(_, t)| chains.iter().any(|c| t.contains(&format!(":{c} - [0:0]"))))
            .map(|(i, _)| i)
            .collect();
        assert!(
            holders.len() <= 1,
            "service chains {chains:?} split over payloads {holders:?}"
        );
    }
}

#[test]
fn small_syncs_stay_one_payload() {
    let r = cluster(3, 2, 0, Layout::Tree);
    let c = cfg(Layout::Tree);
    let opts = FullOptions {
        canaries: true,
        ..Default::default()
    };
    let p = r.full_payloads(&opts, &c, 1000);
    assert_eq!(p.texts.len(), 1);
    assert_eq!(p.joined(), r.payload(&opts, &c).0);
}

#[test]
fn full_sync_batches_whole_services_and_ends_with_shared_chains() {
    for layout in [Layout::Flat, Layout::Tree] {
        let r = cluster(40, 3, 0, layout);
        let c = cfg(layout);
        let opts = FullOptions {
            canaries: true,
            jumps: true,
            stale_nat: ["KUBE-SVC-GONEGONEGONEGONE".to_string()].into(),
        };
        let single = r.payload(&opts, &c).0;
        for max in [1, 7, 50] {
            let p = r.full_payloads(&opts, &c, max);
            let service_chains: usize = r.owners().values().map(Vec::len).sum();
            assert!(
                p.texts.len() >= service_chains / (max + 6),
                "{layout:?} max {max}: only {} payloads",
                p.texts.len()
            );
            assert!(p.texts[0].contains(":KUBE-MARK-MASQ - [0:0]"), "{}", p.texts[0]);
            let last = p.texts.last().expect("payloads");
            assert!(last.starts_with("*mangle\n:KUBE-PROXY-CANARY"), "{last}");
            assert!(last.contains("-X KUBE-SVC-GONEGONEGONEGONE"));
            check_batches(&r, &[], &p, &single, max);
            assert_eq!(p.stats, r.payload(&opts, &c).1, "stats differ when batched");
        }
    }
}

#[test]
fn partial_sync_batches_and_deletes_last() {
    let before = cluster(40, 3, 0, Layout::Tree);
    // 10 services deleted, every other one gains an endpoint.
    let after = cluster(40, 4, 10, Layout::Tree);
    let single = after.partial_payload(&before.digests()).expect("a change").0;
    let p = after.partial_payloads(&before.digests(), 9).expect("a change");
    assert!(p.texts.len() > 3, "{} payloads", p.texts.len());
    assert!(p.texts.last().is_some_and(|t| t.contains("-X KUBE-SVC-")));
    let existing: Vec<String> = before.nat.iter().map(|c| c.name.clone()).collect();
    check_batches(&after, &existing, &p, &single, 9);
    assert!(after.partial_payloads(&after.digests(), 9).is_none());
}
