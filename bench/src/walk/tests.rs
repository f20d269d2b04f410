use std::net::{IpAddr, Ipv4Addr};

use svcnet_proxy::config::{Layout, RenderConfig};
use svcnet_proxy::iptables::render;

use super::*;
use crate::synth;

fn rendered(n: usize, layout: Layout) -> (Rendered, Vec<Ipv4Addr>) {
    let ips = synth::cluster_ips(n, 3);
    let st = synth::state(&ips, 1);
    let cfg = RenderConfig {
        layout,
        ..Default::default()
    };
    (render::render(&st, &synth::node(), &cfg), ips)
}

#[test]
fn flat_walk_is_the_position_in_the_list() {
    let (r, ips) = rendered(300, Layout::Flat);
    let w = Walker::new(&r);
    // Service i is the (i+1)-th rule of the flat list (names sort in creation order).
    for i in [0usize, 1, 150, 299] {
        assert_eq!(w.rules_walked(IpAddr::V4(ips[i]), 80), Some(i + 1), "service {i}");
    }
    assert_eq!(w.rules_walked(IpAddr::V4(ips[0]), 81), None);
    assert_eq!(w.rules_walked(IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)), 80), None);
}

#[test]
fn tree_walk_is_short_and_finds_every_service() {
    let (r, ips) = rendered(3000, Layout::Tree);
    let w = Walker::new(&r);
    let worst = ips
        .iter()
        .map(|ip| {
            w.rules_walked(IpAddr::V4(*ip), 80)
                .expect("every service is reachable")
        })
        .max()
        .unwrap();
    assert!(worst < 80, "tree walk of {worst} rules is not logarithmic");
    assert!(worst > 3, "tree walk of {worst} rules is implausibly short");
}
