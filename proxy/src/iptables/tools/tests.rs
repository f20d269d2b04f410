use super::*;

#[test]
fn split_keeps_quoted_comment_as_one_word() {
    assert_eq!(
        split_rule(
            "-m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"
        ),
        vec![
            "-m",
            "conntrack",
            "--ctstate",
            "NEW",
            "-m",
            "comment",
            "--comment",
            "kubernetes service portals",
            "-j",
            "KUBE-SERVICES"
        ]
    );
    assert_eq!(split_rule("  -j   KUBE-FIREWALL "), vec!["-j", "KUBE-FIREWALL"]);
    assert_eq!(split_rule("--comment \"\""), vec!["--comment", ""]);
}

#[test]
fn backend_follows_hints_then_rule_counts() {
    assert_eq!(choose_backend((50, false), (3, true)), Backend::Nft);
    assert_eq!(choose_backend((0, true), (30, false)), Backend::Legacy);
    assert_eq!(choose_backend((12, false), (3, false)), Backend::Legacy);
    assert_eq!(choose_backend((3, false), (3, false)), Backend::Nft);
    assert_eq!(choose_backend((0, false), (0, false)), Backend::Nft);
}

#[test]
fn save_facts_counts_rules_and_hints() {
    let text = "*mangle\n:PREROUTING ACCEPT [0:0]\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n*nat\n:X - [0:0]\n-A X -j RETURN\n-A X -j ACCEPT\nCOMMIT\n";
    assert_eq!(save_facts(text), (2, true));
    assert_eq!(save_facts("*nat\nCOMMIT\n"), (0, false));
    assert_eq!(saved_chains(text), vec!["PREROUTING", "KUBE-IPTABLES-HINT", "X"]);
}

#[test]
fn versions() {
    assert_eq!(parse_version("iptables v1.8.9 (nf_tables)\n"), Some((1, 8, 9)));
    assert_eq!(parse_version("iptables v1.6"), Some((1, 6, 0)));
    assert_eq!(parse_version("garbage"), None);
    assert!(parse_version("iptables v1.6.1").is_some_and(|v| v < (1, 6, 2)));
}

#[test]
fn tool_names_per_backend() {
    let t = Iptables::new(Family::V6, Backend::Legacy);
    assert_eq!(t.restore, "ip6tables-legacy-restore");
    assert_eq!(Iptables::new(Family::V4, Backend::Plain).save, "iptables-save");
    assert_eq!(Iptables::new(Family::V4, Backend::Nft).cmd, "iptables-nft");
}

#[tokio::test]
async fn a_missing_binary_is_named_as_not_installed() {
    let err = exec("svcnet-test-no-such-binary", &["--version"], None)
        .await
        .expect_err("no such binary");
    assert!(matches!(err, ToolError::NotInstalled { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "svcnet-test-no-such-binary is not installed (not found on PATH)"
    );
    let ipt = Iptables {
        restore: "svcnet-test-no-such-restore".into(),
        ..Iptables::new(crate::model::Family::V4, Backend::Plain)
    };
    let err = ipt.check().await.expect_err("no restore binary");
    assert_eq!(
        err.to_string(),
        "svcnet-test-no-such-restore is not installed (not found on PATH)"
    );
}

#[test]
fn only_iptables_nft_writes_large_syncs_in_batches() {
    assert_eq!(Backend::Nft.restore_max_chains(5000), 5000);
    assert_eq!(Backend::Plain.restore_max_chains(5000), 5000);
    assert_eq!(
        Backend::Legacy.restore_max_chains(5000),
        crate::iptables::render::UNBATCHED
    );
}
