//! The real gcloud pointed at the fake GCE (an access-token file, the compute endpoint override, no
//! prompts or metadata server), for the tests that read the controller's objects as a user would.

use std::process::Command;

use serde_json::Value;

use super::{FakeGce, PROJECT};

pub struct Gcloud {
    config: tempfile::TempDir,
    token: tempfile::NamedTempFile,
    port: u16,
}

impl Gcloud {
    pub fn new(gce: &FakeGce) -> Self {
        let config = tempfile::tempdir().unwrap();
        let token = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(token.path(), "svcnet-fake-token\n").unwrap();
        Gcloud {
            config,
            token,
            port: gce.port,
        }
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("gcloud")
            .args(args)
            .env("CLOUDSDK_CONFIG", self.config.path())
            .env("CLOUDSDK_CORE_PROJECT", PROJECT)
            .env(
                "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE",
                format!("http://127.0.0.1:{}/compute/v1/", self.port),
            )
            .env("CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", self.token.path())
            .env("CLOUDSDK_CORE_DISABLE_PROMPTS", "1")
            .env("CLOUDSDK_CORE_CHECK_GCE_METADATA", "false")
            .env("CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK", "1")
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
