//! The upstream binaries: built by the pinned recipe `testing/k8s/build.sh` on first use (it caches them
//! outside the repository, keyed by the pinned versions), located once per process.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::ClusterError;

/// Where the upstream binaries are.
#[derive(Clone, Debug)]
pub struct Binaries {
    pub dir: PathBuf,
}

impl Binaries {
    pub fn etcd(&self) -> PathBuf {
        self.dir.join("etcd")
    }
    pub fn kube_apiserver(&self) -> PathBuf {
        self.dir.join("kube-apiserver")
    }
    pub fn kube_controller_manager(&self) -> PathBuf {
        self.dir.join("kube-controller-manager")
    }
    pub fn kube_proxy(&self) -> PathBuf {
        self.dir.join("kube-proxy")
    }
    /// kubectl of the same release: the machine's may be outside the client/server skew policy.
    pub fn kubectl(&self) -> PathBuf {
        self.dir.join("kubectl")
    }
}

/// The pinned kubectl when the recipe has built it (or SVCNET_K8S_BIN holds one), else the machine's
/// `kubectl` from PATH (a cache built before the recipe included kubectl).
pub fn kubectl_program() -> PathBuf {
    match binaries() {
        Ok(b) if b.kubectl().exists() => b.kubectl(),
        _ => PathBuf::from("kubectl"),
    }
}

/// The recipe's entry point in this checkout.
pub fn build_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../k8s/build.sh")
}

/// Builds the binaries if the cache lacks them (minutes, once per machine and pinned version; the script
/// takes a lock, so parallel test processes wait for one build) and returns where they are.
/// `SVCNET_K8S_BIN=DIR` uses binaries from DIR instead (a build made elsewhere).
pub fn binaries() -> Result<Binaries, ClusterError> {
    static BINS: OnceLock<Result<Binaries, String>> = OnceLock::new();
    BINS.get_or_init(|| locate().map_err(|e| e.to_string()))
        .clone()
        .map_err(|detail| ClusterError::Build {
            script: build_script(),
            detail,
        })
}

fn locate() -> Result<Binaries, ClusterError> {
    if let Some(dir) = std::env::var_os("SVCNET_K8S_BIN") {
        return Ok(Binaries { dir: dir.into() });
    }
    let script = build_script();
    let fail = |detail: String| ClusterError::Build {
        script: script.clone(),
        detail,
    };
    // The script's progress goes to stderr (shown with the test's output); stdout is the bin dir.
    let out = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| fail(format!("cannot run bash: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!("exit status {}", out.status)));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let dir = stdout
        .lines()
        .last()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .ok_or_else(|| fail("printed no bin directory".into()))?;
    let bins = Binaries { dir: dir.into() };
    for b in [bins.etcd(), bins.kube_apiserver(), bins.kube_controller_manager()] {
        if !b.exists() {
            return Err(fail(format!("{} is missing after the build", b.display())));
        }
    }
    Ok(bins)
}
