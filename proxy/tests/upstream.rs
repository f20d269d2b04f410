//! Upstream kube-proxy's test normalization (`upstream_norm`) checked against upstream's own examples
//! for it in `tests/upstream_sort/` (TestSortIPTablesRules: `<n>.in` sorts to `<n>.out`).

mod upstream_norm;

use std::path::{Path, PathBuf};

use upstream_norm::{diff, sort_rules};

fn dirs(under: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(under)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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
