//! The render cache must be invisible: whatever sequence of syncs the daemon runs, full or partial,
//! batched or not, the kernel ends up holding exactly what one full payload of a render from scratch
//! holds; unchanged ports are not rendered again; nothing is written when nothing changed.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::*;
use crate::config::Layout;
use crate::fixtures::node;
use crate::iptables::render::service::ServiceRules;
use crate::iptables::render::{FullOptions, UNBATCHED, render};
use crate::model::{Family, Protocol};
use crate::offline::input::parse_objects;
use crate::offline::trace::parse;

fn cfg() -> RenderConfig {
    crate::fixtures::cfg(Layout::Tree)
}

/// Services `s0..n`; service i has `eps(i)` endpoints.
fn state(n: usize, eps: impl Fn(usize) -> usize) -> ProxyState {
    let mut y = String::new();
    for i in 0..n {
        y += &format!(
            "---\nkind: Service\nmetadata: {{name: s{i}, namespace: default}}\nspec: {{type: NodePort, clusterIP: 10.0.0.{}, ports: [{{port: 80, nodePort: {}}}]}}\n---\nkind: EndpointSlice\nmetadata: {{name: s{i}-x, namespace: default, labels: {{kubernetes.io/service-name: s{i}}}}}\naddressType: IPv4\nports: [{{port: 80, protocol: TCP}}]\nendpoints:\n",
            i + 1,
            30000 + i
        );
        for e in 0..eps(i) {
            y += &format!(
                "- {{addresses: [10.76.{i}.{}], conditions: {{ready: true}}, nodeName: node-1}}\n",
                e + 1
            );
        }
    }
    let objs = parse_objects(&y).unwrap();
    ProxyState::from_k8s(&objs.services, &objs.slices, Family::V4)
}

fn port(i: usize) -> ServicePortName {
    ServicePortName {
        namespace: "default".into(),
        name: format!("s{i}"),
        port: String::new(),
        protocol: Protocol::Tcp,
    }
}

/// Identifies the render a port's summary came from (a port not rendered again keeps it).
fn rendered(r: &Renderer, i: usize) -> *const ServiceRules {
    Arc::as_ptr(&r.summary(&port(i)).expect("summary").rules)
}

/// One sync as the daemon runs it: every batch taken as it is ready, then the rest; committed.
fn sync(r: &mut Renderer, st: &ProxyState, c: &RenderConfig, full: bool, max: usize) -> Vec<String> {
    let n = node();
    let mut pass = r.begin(st, &n, c, full, max);
    let mut texts = Vec::new();
    while let Some(t) = pass.next_batch() {
        texts.push(t);
    }
    let (rest, done) = pass.finish(full, &BTreeSet::new());
    texts.extend(rest.texts);
    r.commit(done);
    texts
}

/// What one full payload of a render from scratch leaves in an empty kernel.
fn scratch(st: &ProxyState, c: &RenderConfig) -> crate::offline::trace::Ruleset {
    let opts = FullOptions {
        canaries: true,
        ..Default::default()
    };
    parse(&render(st, &node(), c).payload(&opts, c).0).unwrap()
}

/// The first chain that differs between two rulesets.
fn difference(got: &crate::offline::trace::Ruleset, want: &crate::offline::trace::Ruleset) -> Option<String> {
    for table in got.tables().chain(want.tables()) {
        let chains: BTreeSet<&str> = got.chains(table).chain(want.chains(table)).collect();
        for chain in chains {
            let (g, w) = (got.rules(table, chain), want.rules(table, chain));
            let exists = |r: &crate::offline::trace::Ruleset| r.chains(table).any(|c| c == chain);
            if g != w || exists(got) != exists(want) {
                return Some(format!(
                    "{table} {chain}: got {g:#?} (exists {}), want {w:#?}",
                    exists(got)
                ));
            }
        }
    }
    None
}

#[test]
fn any_sequence_of_syncs_leaves_what_a_full_render_leaves() {
    // Grow, change endpoints, delete services, cross the large-cluster limit, change the config.
    let masq13 = RenderConfig {
        masquerade_bit: 13,
        ..cfg()
    };
    let steps: Vec<(ProxyState, RenderConfig)> = vec![
        (state(6, |_| 2), cfg()),
        (state(8, |i| i % 3), cfg()),
        (state(8, |i| if i == 7 { 5 } else { i % 3 }), cfg()),
        (state(4, |_| 1), cfg()),
        (state(12, |_| 90), cfg()),
        (state(12, |i| if i == 0 { 89 } else { 90 }), cfg()),
        (state(12, |i| if i == 0 { 89 } else { 90 }), masq13),
        (state(3, |_| 2), cfg()),
    ];
    for max in [UNBATCHED, 1, 5] {
        // Every step once as a partial sync, and a full sync in the middle of the sequence.
        for full_at in [None, Some(4)] {
            let mut r = Renderer::default();
            let mut kernel = String::new();
            for (k, (st, c)) in steps.iter().enumerate() {
                let full = k == 0 || full_at == Some(k);
                let texts = sync(&mut r, st, c, full, max);
                assert!(!texts.is_empty(), "max {max} step {k}: nothing written");
                kernel.extend(texts);
                let diff = difference(&parse(&kernel).unwrap(), &scratch(st, c));
                assert!(
                    diff.is_none(),
                    "max {max} full at {full_at:?}, step {k}: the kernel differs from a full render: {diff:?}"
                );
                assert!(
                    sync(&mut r, st, c, false, max).is_empty(),
                    "step {k}: a sync without changes wrote something"
                );
            }
        }
    }
}

#[test]
fn only_changed_ports_are_rendered_and_written() {
    let mut r = Renderer::default();
    sync(&mut r, &state(5, |_| 2), &cfg(), true, UNBATCHED);
    let before: Vec<*const ServiceRules> = (0..5).map(|i| rendered(&r, i)).collect();
    let texts = sync(
        &mut r,
        &state(5, |i| if i == 3 { 3 } else { 2 }),
        &cfg(),
        false,
        UNBATCHED,
    );
    for (i, b) in before.iter().enumerate() {
        let same = std::ptr::eq(*b, rendered(&r, i));
        assert_eq!(same, i != 3, "port s{i}: summary kept {same}");
    }
    // s3's service chain and its new endpoint chain; not the unchanged endpoint chains or other ports.
    let declared: Vec<&str> = texts
        .iter()
        .flat_map(|t| t.lines())
        .filter(|l| l.starts_with(":KUBE-"))
        .collect();
    let sep = declared.iter().filter(|l| l.starts_with(":KUBE-SEP-")).count();
    assert_eq!(sep, 1, "{declared:?}");
    assert!(
        declared.iter().any(|l| l.starts_with(":KUBE-SVC-")),
        "{declared:?}"
    );
    assert!(
        !texts.concat().contains("10.76.1."),
        "an unchanged port was written"
    );

    // A full sync writes every port again but keeps the summaries of unchanged ones.
    let st = state(5, |i| if i == 3 { 3 } else { 2 });
    let kept: Vec<*const ServiceRules> = (0..5).map(|i| rendered(&r, i)).collect();
    let texts = sync(&mut r, &st, &cfg(), true, UNBATCHED);
    let seps = texts
        .concat()
        .lines()
        .filter(|l| l.starts_with(":KUBE-SEP-"))
        .count();
    assert_eq!(seps, 11, "a full sync writes every endpoint chain");
    for (i, k) in kept.iter().enumerate() {
        assert!(std::ptr::eq(*k, rendered(&r, i)), "port s{i}: summary replaced");
    }
}

#[test]
fn full_syncs_delete_stale_chains_and_only_those() {
    let mut r = Renderer::default();
    let st = state(2, |_| 1);
    let (n, c) = (node(), cfg());
    let mut pass = r.begin(&st, &n, &c, true, UNBATCHED);
    while pass.next_batch().is_some() {}
    let live = r
        .summary(&port(0))
        .map(|s| s.chains().next().unwrap().0.to_string());
    assert!(live.is_none(), "nothing committed yet");
    let stale: BTreeSet<String> = ["KUBE-SVC-AAAAAAAAAAAAAAAA".to_string()].into();
    let (p, done) = pass.finish(true, &stale);
    r.commit(done);
    let own = r
        .summary(&port(0))
        .unwrap()
        .chains()
        .next()
        .unwrap()
        .0
        .to_string();
    let text = p.joined();
    assert!(text.contains("-X KUBE-SVC-AAAAAAAAAAAAAAAA"), "{text}");
    assert!(!text.contains(&format!("-X {own}")));
    // A chain the kernel holds that is still rendered is kept.
    let stale: BTreeSet<String> = [own.clone()].into();
    let (p, _) = r.begin(&st, &n, &c, true, UNBATCHED).finish(true, &stale);
    assert!(!p.joined().contains("-X "), "{}", p.joined());
}
