use svcnet_proxy::config::{Layout, RenderConfig};
use svcnet_proxy::render::{self, FullOptions};

use super::*;
use crate::synth;

fn sorted_lines(text: &str, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

#[test]
fn chunks_hold_exactly_the_full_payload_and_shared_chains_come_last() {
    for layout in [Layout::Flat, Layout::Tree] {
        let cfg = RenderConfig {
            layout,
            ..Default::default()
        };
        let st = synth::state(&synth::cluster_ips(200, 1), 3);
        let r = render::render(&st, &synth::node(), &cfg);
        let opts = FullOptions {
            jumps: true,
            ..Default::default()
        };
        let (full, _) = r.payload(&opts, &cfg);
        assert_eq!(chunks(&r, &full, 100_000), vec![full.clone()]);
        let parts = chunks(&r, &full, 100);
        assert!(
            parts.len() >= 8,
            "200 services x 4 chains in chunks of 100: {}",
            parts.len()
        );
        let joined = parts.concat();
        assert!(
            sorted_lines(&joined, "-A ") == sorted_lines(&full, "-A "),
            "rules differ"
        );
        // Every chain is declared; shared chains twice (empty first, with rules last).
        let (mut decls, mut want) = (sorted_lines(&joined, ":"), sorted_lines(&full, ":"));
        decls.dedup();
        want.dedup();
        assert!(decls == want, "declared chains differ");
        assert!(!parts[0].contains("-A "), "the first chunk only declares");
        assert!(parts[0].contains(":KUBE-MARK-MASQ "));
        for p in &parts[1..parts.len() - 1] {
            let decls = p.lines().filter(|l| l.starts_with(':')).count();
            assert!(decls <= 100, "a chunk declares {decls} chains");
            assert!(!p.contains(":KUBE-SERVICES "), "shared chain in a service chunk");
            assert!(!p.contains("*filter"), "filter table in a service chunk");
        }
        let last = parts.last().unwrap();
        assert!(last.contains(":KUBE-SERVICES ") && last.contains("-A OUTPUT "));
        // Rules of one chain never straddle chunks (a later declaration would flush them).
        for p in &parts {
            for l in p.lines().filter(|l| l.starts_with("-A KUBE-S")) {
                let chain = l.split_whitespace().nth(1).unwrap();
                if chain.starts_with("KUBE-SVC-") || chain.starts_with("KUBE-SEP-") {
                    assert!(
                        p.contains(&format!(":{chain} ")),
                        "{chain} rule without its declaration"
                    );
                }
            }
        }
    }
}
