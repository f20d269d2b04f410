//! The nftables render output is valid `nft -f` input: every upstream nftables case and every golden
//! cluster (rendered with `--proxy-mode nftables`, IPv4 and IPv6 as its args say) is checked by
//! `nft -c` and then loaded for real, in a throwaway network namespace (never the root namespace),
//! and the kernel's listing holds every chain the text declares.

mod common;

use clap::Parser;
use svcnet_proxy::cli::{Cli, Command};
use svcnet_proxy::offline::run_render;

fn render(argv: Vec<String>) -> String {
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let Command::Render(args) = cli.command else {
        panic!("not a render command")
    };
    run_render(&args).unwrap_or_else(|e| panic!("{argv:?}: {e:#}"))
}

/// (what, text) for every case to load.
fn texts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (dir, flags) in common::upstream_nft_cases() {
        let mut argv = vec![
            "svcnet-proxy".to_string(),
            "render".into(),
            "-f".into(),
            dir.join("input.yaml").display().to_string(),
        ];
        argv.extend(flags);
        out.push((dir.display().to_string(), render(argv)));
    }
    for (input, words, _) in common::golden_cases() {
        let mut argv = vec![
            "svcnet-proxy".to_string(),
            "render".into(),
            "-f".into(),
            input.display().to_string(),
            "--proxy-mode".into(),
            "nftables".into(),
        ];
        argv.extend(words.iter().cloned());
        out.push((format!("{} {}", input.display(), words.join(" ")), render(argv)));
    }
    out
}

#[test]
fn nft_accepts_and_loads_every_render() {
    let texts = texts();
    assert!(texts.len() >= 20, "found {} cases", texts.len());
    for (what, text) in texts {
        // A fresh namespace per case: each text declares the whole table.
        let Some(ns) = svcnet_netns::netns_or_skip("nftload") else {
            return;
        };
        let (ok, _, err) = ns.exec(&["nft", "-c", "-f", "-"], &text);
        assert!(ok, "nft -c rejects {what}: {err}\n{text}");
        let (ok, _, err) = ns.exec(&["nft", "-f", "-"], &text);
        assert!(ok, "nft -f fails on {what}: {err}");
        let family = if text.starts_with("add table ip6 ") {
            "ip6"
        } else {
            "ip"
        };
        let listing = ns.ok(&["nft", "list", "table", family, "kube-proxy"]);
        for line in text.lines().filter(|l| l.starts_with("add chain ")) {
            let name = line.split(' ').nth(4).expect("chain name");
            assert!(
                listing.contains(&format!("chain {name} {{")),
                "{what}: the kernel has no chain {name}"
            );
        }
    }
}
