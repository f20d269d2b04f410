//! Upstream kube-proxy's own expected rulesets against the real `svcnet-proxy render`:
//! `tests/upstream/<case>/` holds `input.yaml` (the objects upstream's test creates), `flags` (one line
//! of render flags matching upstream's NewFakeProxier and the test's settings), `expected.txt`
//! (upstream's expected text, verbatim) and `SOURCE` (the upstream test). Both texts are normalized as
//! upstream's `assertIPTablesRulesEqual` does (`upstream_norm`), then compared byte for byte. A case
//! with a `chain` file (`<table> <chain>`) compares only that chain, as `assertIPTablesChainEqual`.
//! `tests/upstream_sort/` holds upstream's own examples for that normalization.

mod common;
mod upstream_norm;

use std::path::{Path, PathBuf};

use upstream_norm::{chain_pair, diff, normalize_pair, sort_rules};

fn dirs(under: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(under)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every case directory, sorted.
fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dirs("upstream"))
        .expect("tests/upstream")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    cases
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
    let chain = std::fs::read_to_string(case.join("chain")).ok();
    let pair = match chain
        .as_deref()
        .map(str::split_whitespace)
        .map(|mut w| (w.next(), w.next()))
    {
        None => normalize_pair(&expected, &got),
        Some((Some(table), Some(chain))) => chain_pair(&expected, &got, table, chain),
        Some(_) => return Some("the chain file must read `<table> <chain>`".to_string()),
    };
    let (want, got) = match pair {
        Ok(pair) => pair,
        Err(e) => return Some(format!("normalizing the render output: {e}\n{got}")),
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

/// Every case's render output equals upstream's expected ruleset after upstream's normalization.
#[test]
fn upstream_expected_rulesets() {
    let cases = cases();
    assert!(
        cases.len() >= 3,
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
    assert!(
        failures.is_empty(),
        "{} of {} upstream cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// The fixtures are upstream's already-sorted form: sorting them again changes nothing. (Guards the
/// extraction of expected.txt and the normalizer against each other.)
#[test]
fn expected_texts_are_in_upstream_order() {
    for case in cases().into_iter().filter(|c| !c.join("chain").exists()) {
        let expected = read(&case.join("expected.txt"));
        let sorted = sort_rules(&expected).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        assert_eq!(sorted, expected, "{}", case.display());
    }
}

/// Upstream's own examples for `sortIPTablesRules` (TestSortIPTablesRules): `<n>.in` -> `<n>.out`.
#[test]
fn normalizer_matches_upstream_sort_examples() {
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(dirs("upstream_sort"))
        .expect("tests/upstream_sort")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "in"))
        .collect();
    inputs.sort();
    assert_eq!(inputs.len(), 4, "upstream has four examples");
    for input in inputs {
        let got = sort_rules(&read(&input)).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        let want = read(&input.with_extension("out"));
        assert_eq!(
            got,
            want,
            "{}\n{}",
            input.display(),
            diff::unified("upstream", &want, "ours", &got)
        );
    }
}

/// A ruleset that differs from upstream's by one rule, or by the order of two rules in a chain that
/// upstream does not sort, is reported.
#[test]
fn normalized_comparison_catches_differences() {
    let expected = read(&dirs("upstream").join("overall/expected.txt"));
    let changed = expected.replacen("--probability 0.5000000000", "--probability 0.5", 1);
    assert_ne!(changed, expected);
    let (want, got) = normalize_pair(&expected, &changed).expect("parse");
    assert!(diff::unified("a", &want, "b", &got).contains("+-A KUBE-SVC-4SW47YFZTEDKD3PK"));

    let a = "-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000\n";
    let b = "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n";
    let swapped = expected.replacen(&format!("{b}{a}"), &format!("{a}{b}"), 1);
    assert_ne!(swapped, expected);
    let (want, got) = normalize_pair(&expected, &swapped).expect("parse");
    assert_ne!(want, got);

    // Services in KUBE-SERVICES may come in any order: upstream sorts them.
    let svc1 = "-A KUBE-SERVICES -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O\n";
    let moved = expected.replacen(svc1, "", 1).replacen(
        "-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports",
        &format!("{svc1}-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports"),
        1,
    );
    assert_ne!(moved, expected);
    let (want, got) = normalize_pair(&expected, &moved).expect("parse");
    assert_eq!(want, got);
}
