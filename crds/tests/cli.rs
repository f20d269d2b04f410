//! The `svcnet-crds` binary as make and CI call it.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_svcnet-crds");
const FILE: &str = "cloudloadbalancers.svcnet.dev.yaml";

#[test]
fn write_then_check_passes_and_edits_fail_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("crds");

    let missing = Command::new(BIN)
        .args(["check", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!missing.status.success(), "check of an empty dir must fail");

    let write = Command::new(BIN)
        .args(["write", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        write.status.success(),
        "{}",
        String::from_utf8_lossy(&write.stderr)
    );
    assert!(dir.join(FILE).is_file());

    let fresh = Command::new(BIN)
        .args(["check", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        fresh.status.success(),
        "{}",
        String::from_utf8_lossy(&fresh.stderr)
    );

    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("clb", "lb", 1)).unwrap();
    let stale = Command::new(BIN)
        .args(["check", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!stale.status.success(), "check must fail on an edited file");
    let stderr = String::from_utf8_lossy(&stale.stderr);
    assert!(
        stderr.contains(FILE) && stderr.contains("stale"),
        "stderr: {stderr}"
    );
    assert!(
        stderr.contains("cargo run -p svcnet-crds -- write --out manifests/crds"),
        "stderr: {stderr}"
    );

    // write repairs it and is byte-for-byte what was generated first.
    let rewrite = Command::new(BIN)
        .args(["write", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(rewrite.status.success());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}
