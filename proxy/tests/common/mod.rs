//! Throwaway network namespaces for tests that run the real iptables tools. Each namespace has a
//! unique name, is never linked to the root namespace, and is deleted on drop (also on panic).
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub struct Netns {
    pub name: String,
}

impl Netns {
    /// Creates a namespace, or explains why it cannot (not root, no `ip`). In CI a missing
    /// capability is a failure, never a skip.
    pub fn new(tag: &str) -> Result<Netns, String> {
        let name = format!(
            "svcnet-t-{tag}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .map_err(|e| format!("ip: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "ip netns add {name}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Netns { name })
    }

    /// Runs a command inside the namespace with `stdin`, returning (success, stdout, stderr).
    pub fn exec(&self, args: &[&str], stdin: &str) -> (bool, String, String) {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.name])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ip netns exec");
        if let Some(mut s) = child.stdin.take() {
            let _ = s.write_all(stdin.as_bytes());
        }
        let out = child.wait_with_output().expect("wait");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).status();
    }
}

/// A namespace for the test, or `None` with a printed SKIPPED reason outside CI. Under CI=true the
/// missing capability panics: a skip must not pass for a green run there.
pub fn netns_or_skip(tag: &str) -> Option<Netns> {
    match Netns::new(tag) {
        Ok(ns) => Some(ns),
        Err(why) if std::env::var("CI").is_ok_and(|v| !v.is_empty()) => {
            panic!("network namespaces are required in CI but unavailable: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}

/// Every golden case: (input.yaml, CLI words from `<variant>.args`, `<variant>.rules`).
pub fn golden_cases() -> Vec<(PathBuf, Vec<String>, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut cases = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("golden dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for dir in dirs.into_iter().filter(|d| d.is_dir()) {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("case dir")
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for args in files
            .into_iter()
            .filter(|f| f.extension().is_some_and(|e| e == "args"))
        {
            let text = std::fs::read_to_string(&args).expect("args");
            let words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
            cases.push((dir.join("input.yaml"), words, args.with_extension("rules")));
        }
    }
    cases
}
