//! The render cache must be invisible: an incremental render equals a render from scratch, reused
//! rules are shared by pointer, and the pointer-based diff writes what the digest diff writes.

use std::sync::Arc;

use super::*;
use crate::config::Layout;
use crate::input::parse_objects;
use crate::model::Family;
use crate::render::{FullOptions, UNBATCHED, render};

use crate::render::fixtures::node;

fn cfg() -> RenderConfig {
    crate::render::fixtures::cfg(Layout::Tree)
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
        protocol: crate::model::Protocol::Tcp,
    }
}

fn lines(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn unchanged_ports_are_reused_and_changed_ones_rendered_again() {
    let mut r = Renderer::default();
    let a = r.render(&state(5, |_| 2), &node(), &cfg());
    let b = r.render(&state(5, |i| if i == 3 { 3 } else { 2 }), &node(), &cfg());
    for i in 0..5 {
        let same = Arc::ptr_eq(&a.services[&port(i)], &b.services[&port(i)]);
        assert_eq!(same, i != 3, "port s{i}: reused {same}");
    }
    // A context change (here the masquerade bit) renders every port again.
    let c = r.render(
        &state(5, |i| if i == 3 { 3 } else { 2 }),
        &node(),
        &RenderConfig {
            masquerade_bit: 13,
            ..cfg()
        },
    );
    assert!((0..5).all(|i| !Arc::ptr_eq(&b.services[&port(i)], &c.services[&port(i)])));
}

#[test]
fn incremental_renders_equal_renders_from_scratch_and_both_diffs_agree() {
    let mut r = Renderer::default();
    let opts = FullOptions {
        canaries: true,
        ..Default::default()
    };
    // A sequence of states: grow, change endpoints, delete services, cross the large-cluster limit.
    let steps: Vec<ProxyState> = vec![
        state(6, |_| 2),
        state(8, |i| i % 3),
        state(8, |i| if i == 7 { 5 } else { i % 3 }),
        state(4, |_| 1),
        state(12, |_| 90),
        state(12, |i| if i == 0 { 89 } else { 90 }),
    ];
    let mut prev: Option<Rendered> = None;
    for (k, st) in steps.iter().enumerate() {
        let inc = r.render(st, &node(), &cfg());
        let scratch = render(st, &node(), &cfg());
        assert_eq!(
            inc.payload(&opts, &cfg()).0,
            scratch.payload(&opts, &cfg()).0,
            "step {k}: incremental render differs"
        );
        if let Some(p) = &prev {
            let by_render = inc
                .partial_payloads_since(p, UNBATCHED)
                .map(|x| lines(&x.joined()));
            let by_digest = inc
                .partial_payloads(&p.digests(), UNBATCHED)
                .map(|x| lines(&x.joined()));
            assert_eq!(by_render, by_digest, "step {k}: the two diffs disagree");
            assert!(by_render.is_some(), "step {k} changed nothing?");
        }
        assert!(inc.partial_payloads_since(&inc, UNBATCHED).is_none());
        prev = Some(inc);
    }
}
