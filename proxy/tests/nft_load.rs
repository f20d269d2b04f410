//! The nftables render output is valid `nft -f` input: every upstream nftables case and every golden
//! cluster (rendered with `--proxy-mode nftables`, IPv4 and IPv6 as its args say) is checked by
//! `nft -c` and then loaded for real, in a throwaway network namespace (never the root namespace),
//! and the kernel's listing holds every chain the text declares. Each case is loaded in both layouts
//! (`--nftables-layout upstream` and `maps`).

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

/// The case rendered in the upstream layout (its own flags) and in the maps layout.
fn push_layouts(out: &mut Vec<(String, String)>, what: String, argv: Vec<String>) {
    let mut maps = argv.clone();
    maps.extend(["--nftables-layout".to_string(), "maps".into()]);
    out.push((what.clone(), render(argv)));
    out.push((format!("{what} (maps)"), render(maps)));
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
        push_layouts(&mut out, dir.display().to_string(), argv);
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
        push_layouts(&mut out, format!("{} {}", input.display(), words.join(" ")), argv);
    }
    out
}

#[test]
fn nft_accepts_and_loads_every_render() {
    let texts = texts();
    assert!(texts.len() >= 40, "found {} cases", texts.len());
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
