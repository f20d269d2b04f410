use super::*;

#[test]
fn unique_names_embed_tag_and_pid_and_never_repeat() {
    let a = unique("restore");
    let b = unique("restore");
    assert_ne!(a, b);
    assert!(a.starts_with("svcnet-t-restore-"), "{a}");
    assert_eq!(owner_pid(&a), Some(std::process::id()));
}

#[test]
fn owner_pid_reads_tags_with_dashes_from_the_end() {
    assert_eq!(owner_pid("svcnet-t-batch-a-123-4"), Some(123));
    assert_eq!(owner_pid("svcnet-t-eptree-partial-77-0"), Some(77));
    assert_eq!(owner_pid("svcnet-t-x-9-12"), Some(9));
}

#[test]
fn owner_pid_reads_the_benchs_older_names() {
    assert_eq!(owner_pid("svcnet-bench-123-4-flat10"), Some(123));
    assert_eq!(owner_pid("svcnet-bench-123-4-tree-1k"), Some(123));
}

#[test]
fn owner_pid_ignores_everything_else() {
    for name in [
        // The lab's namespaces outlive the `svcnet-lab up` process that made them: never ours.
        "svcnet-lab-1a2b3c4d-vpc",
        "svcnet-lab-1a2b3c4d-node-1",
        "svcnet-t-labprobe-123",
        "svcnet-t-123-4",
        "svcnet-t--123-4",
        "svcnet-t-x-abc-4",
        "svcnet-t-x-123-z",
        "svcnet-bench-x-4",
        "svcnet-bench-1-x-tag",
        "cni-1234-5678",
        "",
    ] {
        assert_eq!(owner_pid(name), None, "{name}");
    }
}
