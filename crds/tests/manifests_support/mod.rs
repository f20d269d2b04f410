//! Support for tests/manifests_valid.rs: rendering with the real kubectl, the cached validator venv,
//! locating the binaries, and a svcnet-apiserver instance.
#![allow(dead_code, clippy::unwrap_used)]

pub mod subset;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

/// `manifests/` of this repository.
pub fn manifests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../manifests")
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn runs(tool: &str, args: &[&str]) -> bool {
    Command::new(tool)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Is kubectl there? Missing: fails under CI=true, else prints SKIPPED and returns false.
pub fn have_kubectl(what: &str) -> bool {
    if runs("kubectl", &["version", "--client"]) {
        return true;
    }
    assert!(!in_ci(), "kubectl is missing under CI=true ({what})");
    println!("SKIPPED: kubectl is not installed; {what} did not run");
    false
}

/// `kubectl kustomize manifests/<rel>`.
pub fn kubectl_kustomize(rel: &str) -> String {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(manifests_dir().join(rel))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl kustomize manifests/{rel} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every document of a multi-document YAML stream, as JSON values (null documents dropped).
pub fn docs(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

fn target_dir() -> PathBuf {
    if let Ok(d) = std::env::var("CARGO_TARGET_DIR") {
        return PathBuf::from(d);
    }
    // <target>/<profile>/deps/<test> -> <target>
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
}

/// The `kubernetes-validate` CLI (PyPI) from a venv cached under the target dir, so only the first run
/// downloads. None (after SKIPPED) only when python3/venv is missing outside CI; a failed install fails.
pub fn validator() -> Option<PathBuf> {
    static V: OnceLock<Option<PathBuf>> = OnceLock::new();
    V.get_or_init(|| {
        let dir = target_dir().join("manifests-validate-venv");
        let bin = dir.join("bin/kubernetes-validate");
        if runs(bin.to_str().unwrap(), &["--version"]) {
            return Some(bin);
        }
        let venv_ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if !venv_ok {
            assert!(
                !in_ci(),
                "python3 -m venv failed under CI=true: cannot install kubernetes-validate"
            );
            println!(
                "SKIPPED: python3 -m venv failed (python3-venv missing?); schema validation did not run"
            );
            return None;
        }
        let st = Command::new(dir.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "kubernetes-validate",
            ])
            .status()
            .unwrap();
        assert!(st.success(), "pip install kubernetes-validate failed");
        assert!(
            runs(bin.to_str().unwrap(), &["--version"]),
            "kubernetes-validate not runnable after install"
        );
        Some(bin)
    })
    .clone()
}

pub struct Bins {
    pub apiserver: PathBuf,
    pub proxy: PathBuf,
    pub controller: PathBuf,
}

/// Builds (once per process, same profile and target dir) and locates the binaries of other packages:
/// Cargo does not build them for this package's tests.
pub fn bins() -> &'static Bins {
    static BINS: OnceLock<Bins> = OnceLock::new();
    BINS.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args([
            "build",
            "-p",
            "svcnet-apiserver",
            "-p",
            "svcnet-proxy",
            "-p",
            "svcnet-cloud-controller",
        ]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let st = cmd.current_dir(env!("CARGO_MANIFEST_DIR")).status().unwrap();
        assert!(st.success(), "building the binaries failed");
        let b = Bins {
            apiserver: dir.join("svcnet-apiserver"),
            proxy: dir.join("svcnet-proxy"),
            controller: dir.join("svcnet-cloud-controller"),
        };
        for p in [&b.apiserver, &b.proxy, &b.controller] {
            assert!(p.exists(), "missing {}", p.display());
        }
        b
    })
}

/// What a kubectl call must have done.
pub enum Need {
    Success,
}

pub fn need(out: &Output, _: Need, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The real svcnet-apiserver on a free loopback port, killed on drop.
pub struct ApiServer {
    child: Child,
    pub dir: tempfile::TempDir,
}

impl ApiServer {
    pub fn start(bin: &Path) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(bin)
            .args(["--listen", "127.0.0.1:0", "--kubeconfig-out"])
            .arg(dir.path().join("kubeconfig"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.starts_with("listening on "),
            "unexpected first line {line:?}"
        );
        ApiServer { child, dir }
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// The real kubectl with this server's kubeconfig and its own discovery cache and HOME.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", self.dir.path().join("kubeconfig"))
            .env("KUBECACHEDIR", self.dir.path().join("kube-cache"))
            .env("HOME", self.dir.path())
            .output()
            .unwrap()
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
