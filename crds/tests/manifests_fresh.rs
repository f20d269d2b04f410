//! `cargo test --workspace` fails when the committed manifests/crds no longer match the types.

mod common;

use svcnet_crds::manifests::{REGENERATE_COMMAND, check_dir, first_difference, generated_files};

#[test]
fn committed_crd_yaml_matches_the_rust_types() {
    let dir = common::committed_dir();
    for file in generated_files().unwrap() {
        let path = dir.join(&file.file_name);
        let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{} is missing ({e}); regenerate with: {REGENERATE_COMMAND}",
                path.display()
            )
        });
        if let Some(line) = first_difference(&committed, &file.contents) {
            panic!(
                "manifests/crds/{} is stale (first difference at line {line}); regenerate with: {REGENERATE_COMMAND}",
                file.file_name
            );
        }
    }
}

#[test]
fn committed_dir_has_no_leftover_crd_files() {
    let problems = check_dir(&common::committed_dir()).unwrap();
    assert!(
        problems.is_empty(),
        "manifests/crds is stale: {}; regenerate with: {REGENERATE_COMMAND}",
        problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    );
}
