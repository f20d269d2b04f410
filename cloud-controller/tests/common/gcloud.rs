//! The real gcloud pointed at the fake GCE (`svcnet_testcluster::gcloud`), for the tests that read
//! the controller's objects as a user would.

use std::process::Command;

use serde_json::Value;

use super::{FakeGce, PROJECT};

pub struct Gcloud {
    /// Its config directory and token file.
    dir: tempfile::TempDir,
    port: u16,
}

impl Gcloud {
    pub fn new(gce: &FakeGce) -> Self {
        Gcloud {
            dir: tempfile::tempdir().unwrap(),
            port: gce.port,
        }
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = svcnet_testcluster::gcloud::command(self.dir.path(), self.port, PROJECT)
            .unwrap()
            .args(args)
            .output()
            .expect("run gcloud");
        assert!(
            out.status.success(),
            "gcloud {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `--format=json` output as a list (what `list` commands print).
    pub fn json(&self, args: &[&str]) -> Vec<Value> {
        let mut a = args.to_vec();
        a.push("--format=json");
        let v: Value = serde_json::from_str(&self.run(&a)).unwrap();
        v.as_array().cloned().unwrap_or_default()
    }
}

impl Gcloud {
    /// `--format=json` output as printed (what `describe` commands print).
    pub fn value(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.push("--format=json");
        serde_json::from_str(&self.run(&a)).unwrap()
    }
}

/// Whether gcloud runs here; prints a SKIPPED line naming `what` when not.
pub fn have_gcloud(what: &str) -> bool {
    let ok = Command::new("gcloud")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("SKIPPED: gcloud is not installed; {what} did not run");
    }
    ok
}
