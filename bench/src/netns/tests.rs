use super::*;

#[test]
fn owner_pid_reads_only_our_names() {
    assert_eq!(owner_pid("svcnet-bench-123-4-flat10"), Some(123));
    assert_eq!(owner_pid("svcnet-t-restore-123-4"), None);
    assert_eq!(owner_pid("svcnet-bench-x-4"), None);
}

#[test]
fn lab_namespace_is_created_and_deleted() {
    let ns = match Netns::create_lab("unit") {
        Ok(ns) => ns,
        Err(e) if std::env::var("CI").is_ok_and(|v| !v.is_empty()) => panic!("netns required in CI: {e}"),
        Err(e) => {
            eprintln!("SKIPPED: {e}");
            return;
        }
    };
    let name = ns.name.clone();
    let out = ns
        .command("ip")
        .args(["-4", "addr", "show", "lo"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(ENDPOINT_ADDR));
    drop(ns);
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&list.stdout).contains(&name));
}
