//! Upstream kube-proxy's expected nftables rulesets against the real `svcnet-proxy render --proxy-mode
//! nftables`: `tests/upstream-nft/<case>/` holds `input.yaml` (the objects upstream's test creates),
//! `flags` (render flags matching upstream's NewFakeProxier), `expected.txt` (upstream's expected text:
//! `baseRules` plus the test's dedented text) and `SOURCE` (the upstream test). Both texts are
//! normalized as upstream's `assertNFTablesTransactionEqual` does (`upstream_nft_norm`), then compared
//! byte for byte. `tests/upstream_nft_sort/` holds upstream's own example for that normalization.

mod common;
#[path = "upstream_norm/diff.rs"]
mod diff;
mod upstream_nft_norm;

use std::path::{Path, PathBuf};

use upstream_nft_norm::{normalize_pair, sort_transaction};

/// Cases whose expectation is a state between two of upstream's syncs, with why. TestSyncProxyRulesRepeated
/// checks the kernel's table after partial syncs: a chain no service uses any more is flushed at once
/// but deleted only at a sync at least a second later (kernels before 6.2 notice late that a verdict
/// map no longer refers to it; `staleChains`), so those states hold empty chains no render of the
/// objects contains. Their steady state, what upstream's table holds after that later sync, is the
/// expectation without those chains ([`without_flushed_chains`]); it must equal the render, and the
/// chains must be there (else the case is no longer mid-sync and leaves this list). The differential
/// test (`differential_nftables_*`) sees the same chains on the real kube-proxy and compares the same
/// steady states.
const MID_SYNC: &[(&str, &str)] = &[
    ("sync-repeated-03", "flushed chains of deleted svc2"),
    ("sync-repeated-07", "flushed chain of svc3's old endpoint"),
    ("sync-repeated-09", "flushed chains of emptied svc3"),
];

/// The expectation without the per-service chains that are declared but have no rule and are named
/// nowhere else (upstream's flushed chains awaiting deletion); and how many were dropped.
fn without_flushed_chains(expected: &str) -> (String, usize) {
    const ADD_CHAIN: &str = "add chain ip kube-proxy ";
    const ADD_CHAIN6: &str = "add chain ip6 kube-proxy ";
    let declared = |line: &str| -> Option<String> {
        let name = line
            .strip_prefix(ADD_CHAIN)
            .or_else(|| line.strip_prefix(ADD_CHAIN6))?
            .trim();
        (name.contains('/') && !name.contains(' ')).then(|| name.to_string())
    };
    let named_elsewhere = |name: &str| {
        expected.lines().any(|l| {
            declared(l).is_none()
                && l.split(|c: char| c.is_whitespace() || c == ',' || c == '{' || c == '}')
                    .any(|w| w == name)
        })
    };
    let mut dropped = 0;
    let mut out = String::with_capacity(expected.len());
    for line in expected.lines() {
        if declared(line).is_some_and(|n| !named_elsewhere(&n)) {
            dropped += 1;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    (out, dropped)
}

fn dirs(under: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(under)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dirs("upstream-nft"))
        .expect("tests/upstream-nft")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    cases
}

fn name(case: &Path) -> String {
    case.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `svcnet-proxy render -f input.yaml <flags>`.
fn render(case: &Path) -> Result<String, String> {
    common::render_with_flags_file(&case.join("input.yaml"), &case.join("flags"), &[])
}

/// None when the case passes, else what to print. A [`MID_SYNC`] case is compared in its steady
/// state.
fn check(case: &Path) -> Option<String> {
    let mut expected = read(&case.join("expected.txt"));
    if MID_SYNC.iter().any(|(n, _)| *n == name(case)) {
        let (steady, dropped) = without_flushed_chains(&expected);
        if dropped == 0 {
            return Some("no flushed chain in the expectation: take it off MID_SYNC".into());
        }
        expected = steady;
    }
    let got = match render(case) {
        Ok(got) => got,
        Err(e) => return Some(e),
    };
    let (want, got) = match normalize_pair(&expected, &got) {
        Ok(pair) => pair,
        Err(e) => return Some(format!("normalizing: {e}\n{got}")),
    };
    (want != got).then(|| {
        diff::unified(
            "expected (upstream)",
            &want,
            "render (svcnet, normalized as upstream)",
            &got,
        )
    })
}

/// Every case's render output equals upstream's expected ruleset after upstream's normalization
/// ([`MID_SYNC`] cases in their steady state).
#[test]
fn upstream_expected_nft_rulesets() {
    let cases = cases();
    assert!(
        cases.len() >= 13,
        "expected the upstream cases, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        if let Some(report) = check(case) {
            let source = read(&case.join("SOURCE"));
            failures.push(format!("=== {} ({})\n{report}", case.display(), source.trim()));
        }
    }
    eprintln!(
        "{} of {} upstream nftables cases pass ({} of them mid-sync, compared in their steady state)",
        cases.len() - failures.len(),
        cases.len(),
        MID_SYNC.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} upstream cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Every mid-sync case exists (a renamed fixture must not leave a dead entry), and only the flushed
/// chains go: a chain with rules, or one a map still names, stays.
#[test]
fn mid_sync_list_names_real_cases_and_drops_only_flushed_chains() {
    let names: Vec<String> = cases().iter().map(|c| name(c)).collect();
    for (n, _) in MID_SYNC {
        assert!(
            names.iter().any(|c| c == n),
            "MID_SYNC names {n}, which is not a case"
        );
    }
    let text = "add chain ip kube-proxy service-AAAAAAAA-ns/a/tcp/p80\n\
                add chain ip kube-proxy service-BBBBBBBB-ns/b/tcp/p80\n\
                add rule ip kube-proxy service-BBBBBBBB-ns/b/tcp/p80 reject\n\
                add chain ip kube-proxy service-CCCCCCCC-ns/c/tcp/p80\n\
                add element ip kube-proxy service-ips { 10.0.0.3 . tcp . 80 : goto service-CCCCCCCC-ns/c/tcp/p80 }\n\
                add chain ip kube-proxy services\n";
    let (steady, dropped) = without_flushed_chains(text);
    assert_eq!(dropped, 1);
    assert!(!steady.contains("ns/a/") && steady.contains("add chain ip kube-proxy service-BBBBBBBB"));
    assert!(steady.contains("add chain ip kube-proxy service-CCCCCCCC") && steady.contains("services"));
}

/// Upstream's own example for `sortNFTablesTransaction` (Test_sortNFTablesTransaction).
#[test]
fn normalizer_matches_upstream_sort_example() {
    let input = read(&dirs("upstream_nft_sort").join("1.in"));
    let want = read(&dirs("upstream_nft_sort").join("1.out"));
    let got = sort_transaction(&input).expect("sort");
    assert_eq!(got, want, "{}", diff::unified("upstream", &want, "ours", &got));
}

/// The comparison catches a changed rule and two rules of one chain swapped, and ignores the order
/// of chains and elements, as upstream's does.
#[test]
fn normalized_comparison_catches_differences() {
    let expected = read(&dirs("upstream-nft").join("overall/expected.txt"));
    let changed = expected.replacen("numgen random mod 2", "numgen random mod 3", 1);
    assert_ne!(changed, expected);
    let (want, got) = normalize_pair(&expected, &changed).expect("parse");
    assert_ne!(want, got);

    let a = "add rule ip kube-proxy masquerading mark and 0x4000 == 0 return\n";
    let b = "add rule ip kube-proxy masquerading mark set mark xor 0x4000\n";
    let swapped = expected.replacen(&format!("{a}{b}"), &format!("{b}{a}"), 1);
    assert_ne!(swapped, expected);
    let (want, got) = normalize_pair(&expected, &swapped).expect("parse");
    assert_ne!(want, got);

    let e = "add element ip kube-proxy cluster-ips { 172.30.0.41 }\n";
    let moved = format!("{}{e}", expected.replacen(e, "", 1));
    assert_ne!(moved, expected);
    let (want, got) = normalize_pair(&expected, &moved).expect("parse");
    assert_eq!(want, got);
}
