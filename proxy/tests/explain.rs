//! `svcnet-proxy explain` in both modes on the walkthrough's `hostnames` Service: the same fates
//! (each pod half the time, masquerade only from outside), each through its own mode's objects; and
//! the nftables mode's maps layout, through its sets and maps.

use std::path::Path;

use clap::Parser;
use svcnet_proxy::cli::{Cli, Command};
use svcnet_proxy::offline::run_explain;

fn explain(mode: &str) -> String {
    explain_with(mode, &[])
}

fn explain_with(mode: &str, extra: &[&str]) -> String {
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/hostnames/input.yaml");
    let mut argv = vec![
        "svcnet-proxy",
        "explain",
        "-f",
        input.to_str().expect("utf-8 path"),
        "--service",
        "default/hostnames",
        "--cluster-cidr",
        "10.76.0.0/14",
        "--node-name",
        "gke-kube-sandbox-default-pool-88bb8656-26d1",
        "--proxy-mode",
        mode,
    ];
    argv.extend(extra);
    let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{e}"));
    let Command::Explain(args) = cli.command else {
        panic!("not explain")
    };
    run_explain(&args).unwrap_or_else(|e| panic!("{e:#}"))
}

/// The fate lines ("  50.0%  DNAT to ..., source kept"), without the chains they went through.
fn fates(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains('%'))
        .map(|l| l.split("  via ").next().unwrap_or(l).trim().to_string())
        .collect()
}

#[test]
fn both_modes_explain_the_same_fates_through_their_own_objects() {
    let ipt = explain("iptables");
    let nft = explain("nftables");
    assert!(ipt.contains("KUBE-SVC-YN5D6RYVEVZOH44Q"), "{ipt}");
    assert!(nft.contains("nftables mode"), "{nft}");
    assert!(nft.contains("service-"), "{nft}");
    assert!(nft.contains("endpoint-") && !nft.contains("KUBE-SEP-"), "{nft}");
    let f = fates(&nft);
    assert_eq!(f, fates(&ipt), "iptables:\n{ipt}\nnftables:\n{nft}");
    assert!(
        f.contains(&"50.0%  DNAT to 10.76.0.9:9376, source kept".to_string()),
        "{nft}"
    );
    assert!(
        f.contains(&"50.0%  DNAT to 10.76.0.10:9376, source masqueraded to the node".to_string()),
        "{nft}"
    );
}

#[test]
fn maps_layout_explains_the_same_fates_through_its_elements() {
    let ipt = explain("iptables");
    let maps = explain_with("nftables", &["--nftables-layout", "maps"]);
    assert!(maps.contains("maps layout"), "{maps}");
    assert!(
        maps.contains("elements in: @cluster-ips, @eps-2, @hairpin, @masq-cluster, @svcs-2"),
        "{maps}"
    );
    assert!(
        !maps.contains("endpoint-") && !maps.contains("service-"),
        "{maps}"
    );
    assert_eq!(fates(&maps), fates(&ipt), "iptables:\n{ipt}\nmaps:\n{maps}");
}
