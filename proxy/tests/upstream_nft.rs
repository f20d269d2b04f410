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

/// Cases that are upstream expectations but not render states, with why. TestSyncProxyRulesRepeated
/// checks the kernel's table after partial syncs: a chain no service uses any more is flushed at once
/// but deleted only a second later (older kernels notice late that a verdict map no longer refers to
/// it), so those states hold empty stale chains that no render of the objects can contain. They
/// become tests of the syncing daemon (issue 18, stage 2).
const SKIP: &[(&str, &str)] = &[
    (
        "sync-repeated-03",
        "stale empty chains of deleted svc2 (sync artifact, stage 2)",
    ),
    (
        "sync-repeated-07",
        "stale empty chain of svc3's old endpoint (sync artifact, stage 2)",
    ),
    (
        "sync-repeated-09",
        "stale empty chains of emptied svc3 (sync artifact, stage 2)",
    ),
];

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

/// None when the case passes, else what to print.
fn check(case: &Path) -> Option<String> {
    let expected = read(&case.join("expected.txt"));
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

/// Every case's render output equals upstream's expected ruleset after upstream's normalization;
/// skipped cases are listed (and must still differ, so the list cannot go stale silently).
#[test]
fn upstream_expected_nft_rulesets() {
    let cases = cases();
    assert!(
        cases.len() >= 10,
        "expected the upstream cases, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    let mut passed = 0;
    for case in &cases {
        let skip = SKIP.iter().find(|(n, _)| *n == name(case));
        let result = check(case);
        match (skip, result) {
            (Some((n, why)), Some(_)) => eprintln!("skipped upstream case {n}: {why}"),
            (Some((n, _)), None) => failures.push(format!("=== {n} passes now: take it off the SKIP list")),
            (None, Some(report)) => {
                let source = read(&case.join("SOURCE"));
                failures.push(format!("=== {} ({})\n{report}", case.display(), source.trim()));
            }
            (None, None) => passed += 1,
        }
    }
    eprintln!(
        "{passed} of {} upstream nftables cases pass, {} skipped",
        cases.len(),
        SKIP.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} upstream cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Every skipped case exists (a renamed fixture must not leave a dead entry).
#[test]
fn skip_list_names_real_cases() {
    let names: Vec<String> = cases().iter().map(|c| name(c)).collect();
    for (n, _) in SKIP {
        assert!(
            names.iter().any(|c| c == n),
            "SKIP names {n}, which is not a case"
        );
    }
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
