use std::io::Write;

use clap::Parser;

use super::*;
use crate::cli::{Cli, Command};
use crate::config::DetectLocal as LocalDetection;

fn run_args(flags: &[&str]) -> RunArgs {
    let argv = ["svcnet-proxy", "run", "--hostname-override", "Node-A"]
        .into_iter()
        .chain(flags.iter().copied());
    match Cli::try_parse_from(argv).expect("flags parse").command {
        Command::Run(a) => a,
        other => panic!("not run: {other:?}"),
    }
}

fn settings(flags: &[&str]) -> Result<RunSettings, SettingsError> {
    RunSettings::from_args(run_args(flags))
}

/// The message of a rejected flag set.
fn rejected(flags: &[&str]) -> String {
    match settings(flags) {
        Ok(s) => panic!("{flags:?} accepted: {s:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_flags_are_rejected_with_the_flag_named() {
    for (flags, want) in [
        (
            &["--detect-local-mode", "Bogus"][..],
            "invalid flags: --detect-local-mode \"Bogus\": expected ClusterCIDR",
        ),
        (
            &["--detect-local-mode", "BridgeInterface"],
            "--detect-local-mode BridgeInterface needs --pod-bridge-interface",
        ),
        (
            &["--detect-local-mode", "InterfaceNamePrefix"],
            "--detect-local-mode InterfaceNamePrefix needs --pod-interface-name-prefix",
        ),
        (
            &[
                "--detect-local-mode",
                "BridgeInterface",
                "--pod-bridge-interface",
                "a-name-far-too-long",
            ],
            "--pod-bridge-interface interface name \"a-name-far-too-long\"",
        ),
        (
            &["--iptables-masquerade-bit", "40"],
            "--iptables-masquerade-bit 40: must be 0..=31",
        ),
        (
            &["--nodeport-addresses", "10.0.0.0/40"],
            "--nodeport-addresses \"10.0.0.0/40\"",
        ),
        (
            &["--healthz-bind-address", "nowhere"],
            "--healthz-bind-address \"nowhere\"",
        ),
        (
            &["--metrics-bind-address", "1.2.3:99"],
            "--metrics-bind-address \"1.2.3:99\"",
        ),
    ] {
        let message = rejected(flags);
        assert!(message.contains(want), "{flags:?}: {message}");
    }
}

#[test]
fn good_flags_become_typed_settings() {
    let s = settings(&[
        "--cluster-cidr",
        "10.244.0.0/16",
        "--nodeport-addresses",
        "primary,10.0.0.0/8",
        "--healthz-bind-address",
        "127.0.0.1",
        "--metrics-bind-address",
        "",
        "--iptables-restore-max-chains",
        "0",
        "--iptables-backend",
        "legacy",
    ])
    .expect("valid");
    assert_eq!(s.rules.node_name, "node-a", "the override, lower-cased");
    assert_eq!(
        s.rules.local,
        LocalDetection::ClusterCidr(vec!["10.244.0.0/16".parse().expect("cidr")])
    );
    assert!(s.rules.nodeport_addresses.primary);
    assert_eq!(s.healthz_address, Some("127.0.0.1:10256".parse().expect("addr")));
    assert_eq!(s.metrics_address, None, "empty disables");
    assert_eq!(s.restore_max_chains, crate::iptables::render::UNBATCHED);
    assert_eq!(s.backend, Some(Backend::Legacy));
    // The defaults.
    let d = settings(&[]).expect("valid");
    assert_eq!(d.rules.local, LocalDetection::None);
    assert_eq!(d.metrics_address, Some("127.0.0.1:10249".parse().expect("addr")));
    assert_eq!(d.backend, None);
}

/// Unset `--nodeport-addresses` means every local address in iptables mode and the node's primary
/// IPs in nftables mode (upstream's platformApplyDefaults); given, it is taken as is in both.
#[test]
fn nodeport_addresses_default_per_mode() {
    let unset = settings(&[]).expect("valid").rules.nodeport_addresses;
    assert!(unset.is_unset() && unset.match_all(Family::V4) && unset.match_all(Family::V6));
    let nft = settings(&["--proxy-mode", "nftables"]).expect("valid");
    assert_eq!(
        nft.rules.nodeport_addresses,
        NodePortAddresses {
            cidrs: vec![],
            primary: true
        }
    );
    assert!(!nft.rules.nodeport_addresses.match_all(Family::V4));
    let all = settings(&[
        "--proxy-mode",
        "nftables",
        "--nodeport-addresses",
        "0.0.0.0/0,::/0",
    ])
    .expect("valid")
    .rules
    .nodeport_addresses;
    assert!(!all.primary && all.match_all(Family::V4) && all.match_all(Family::V6));
}

/// The nftables mode's mark bit is `nftables.masqueradeBit` of the config file (default 14), never
/// `--iptables-masquerade-bit` (kube-proxy passes NFTables.MasqueradeBit to its nftables proxier).
#[test]
fn nftables_mode_takes_its_own_masquerade_bit() {
    let bit = |flags: &[&str]| settings(flags).expect("valid").rules.masquerade_bit;
    assert_eq!(bit(&["--iptables-masquerade-bit", "5"]), 5);
    assert_eq!(
        bit(&["--proxy-mode", "nftables", "--iptables-masquerade-bit", "5"]),
        14
    );
    let f = config_file("mode: nftables\nnftables:\n  masqueradeBit: 7\niptables:\n  masqueradeBit: 5\n");
    let path = f.path().to_str().expect("utf-8");
    assert_eq!(bit(&["--config", path]), 7);
    let f = config_file("mode: nftables\nnftables:\n  masqueradeBit: 32\n");
    let message = rejected(&["--config", f.path().to_str().expect("utf-8")]);
    assert!(message.contains("nftables.masqueradeBit 32"), "{message}");
}

#[test]
fn render_config_takes_node_cidrs_only_in_node_cidr_mode() {
    let node = NodeFacts {
        pod_cidrs: vec!["10.244.3.0/24".parse().expect("cidr")],
        ..Default::default()
    };
    let s = settings(&["--detect-local-mode", "NodeCIDR", "--cluster-cidr", "10.0.0.0/8"]).expect("valid");
    let cfg = s.rules.render_config(Family::V4, &node);
    assert_eq!(cfg.detect_local, DetectLocal::NodeCidr(node.pod_cidrs.clone()));
    assert_eq!(cfg.validate(), Ok(()));
    let s = settings(&[
        "--detect-local-mode",
        "InterfaceNamePrefix",
        "--pod-interface-name-prefix",
        "veth",
        "--iptables-masquerade-bit",
        "3",
        "--layout",
        "flat",
    ])
    .expect("valid");
    let cfg = s.rules.render_config(Family::V6, &node);
    assert_eq!(cfg.detect_local, DetectLocal::InterfaceNamePrefix("veth".into()));
    assert_eq!(
        (cfg.family, cfg.layout, cfg.masq_mark().as_str()),
        (Family::V6, Layout::Flat, "0x8")
    );
}

fn config_file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().expect("tmp");
    f.write_all(text.as_bytes()).expect("write");
    f
}

#[test]
fn config_file_values_win_and_are_checked_like_flags() {
    let f = config_file(
        "kind: KubeProxyConfiguration\nclusterCIDR: 10.8.0.0/16\nhealthzBindAddress: 0.0.0.0:10999\n\
         iptables:\n  syncPeriod: 1m\n  masqueradeBit: 5\nconntrack:\n  udpTimeout: 10s\n",
    );
    let path = f.path().to_str().expect("utf-8");
    let s = settings(&["--config", path, "--cluster-cidr", "10.9.0.0/16"]).expect("valid");
    assert_eq!(
        s.rules.local,
        LocalDetection::ClusterCidr(vec!["10.8.0.0/16".parse().expect("cidr")])
    );
    assert_eq!(s.healthz_address, Some("0.0.0.0:10999".parse().expect("addr")));
    assert_eq!(s.sync_period, Duration::from_secs(60));
    assert_eq!(s.rules.masquerade_bit, 5);
    assert_eq!(s.conntrack.conntrack_udp_timeout, Duration::from_secs(10));

    let f = config_file("detectLocalMode: Bogus\n");
    let message = rejected(&["--config", f.path().to_str().expect("utf-8")]);
    assert!(message.contains("--detect-local-mode \"Bogus\""), "{message}");
    let f = config_file("clusterCIDR: 10.8.0.0/99\n");
    let message = rejected(&["--config", f.path().to_str().expect("utf-8")]);
    assert!(
        message.contains("clusterCIDR: \"10.8.0.0/99\" is not a CIDR"),
        "{message}"
    );
    let f = config_file("conntrack:\n  udpTimeout: soon\n");
    let message = rejected(&["--config", f.path().to_str().expect("utf-8")]);
    assert!(message.contains("conntrack.udpTimeout"), "{message}");
}

#[test]
fn the_node_name_comes_from_the_override_then_node_name() {
    assert_eq!(node_name(Some(" Big-Node "), "other").expect("name"), "big-node");
    assert_eq!(node_name(Some(""), "Other").expect("name"), "other");
    assert_eq!(node_name(None, "n1").expect("name"), "n1");
}

#[test]
fn offline_node_is_picked_by_name_and_flags_laid_over() {
    let node = |name: &str, ip: &str| -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}]},
        }))
        .expect("node")
    };
    let nodes = [node("a", "10.0.0.1"), node("b", "10.0.0.2")];
    let mut rules = RuleSettings::from_args(&run_args(&[]).rules, ProxyMode::Iptables).expect("valid");
    assert_eq!(
        rules.pick_node(&nodes).and_then(|n| n.metadata.name.as_deref()),
        Some("a")
    );
    rules.node_name = "b".into();
    rules.node_ips = vec!["10.0.0.9".parse().expect("ip")];
    let facts = rules.node_facts(rules.pick_node(&nodes));
    assert_eq!(facts.name, "b");
    let want: Vec<IpAddr> = ["10.0.0.2", "10.0.0.9"].map(|i| i.parse().expect("ip")).to_vec();
    assert_eq!(facts.ips, want);
    rules.node_name = "c".into();
    assert!(rules.pick_node(&nodes).is_none());
    assert_eq!(rules.node_facts(None).name, "c");
}

#[test]
fn nftables_layout_reaches_the_daemon_settings_and_the_render_config() {
    let s = settings(&["--proxy-mode", "nftables"]).expect("upstream layout");
    assert_eq!(s.rules.nft_layout, NftLayout::Upstream);
    let s = settings(&["--proxy-mode", "nftables", "--nftables-layout", "maps"]).expect("maps layout");
    assert_eq!(s.rules.nft_layout, NftLayout::Maps);
    let args = run_args(&["--proxy-mode", "nftables", "--nftables-layout", "maps"]);
    let rules = RuleSettings::from_args(&args.rules, ProxyMode::Nftables).expect("rules");
    assert_eq!(
        rules.render_config(Family::V4, &NodeFacts::default()).nft_layout,
        NftLayout::Maps
    );
}
