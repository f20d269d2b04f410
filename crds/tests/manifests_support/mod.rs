//! Support for tests/manifests_valid.rs and manifests_apply.rs: rendering with the real kubectl, the
//! cached validator venv, locating the binaries, and a real kube-apiserver instance.
#![allow(dead_code, clippy::unwrap_used)]

pub mod subset;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;
use svcnet_netns::in_ci;
use svcnet_testcluster::{Cluster, Options};

/// `manifests/` of this repository.
pub fn manifests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../manifests")
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
    serde_saphyr::from_multiple::<Value>(text)
        .unwrap()
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}

/// The `kubernetes-validate` CLI (PyPI) from a venv cached under the target dir, so only the first run
/// downloads. None (after SKIPPED) only when python3/venv is missing outside CI; a failed install fails.
pub fn validator() -> Option<PathBuf> {
    static V: OnceLock<Option<PathBuf>> = OnceLock::new();
    V.get_or_init(|| {
        let bin = |dir: &Path| dir.join("bin/kubernetes-validate");
        let venv =
            svcnet_testcluster::python::venv("manifests-validate-venv", "kubernetes-validate", |dir| {
                runs(bin(dir).to_str().unwrap(), &["--version"])
            })
            .unwrap_or_else(|e| panic!("installing kubernetes-validate: {e}"));
        let Some(dir) = venv else {
            assert!(
                !in_ci(),
                "python3 -m venv failed under CI=true: cannot install kubernetes-validate"
            );
            println!(
                "SKIPPED: python3 -m venv failed (python3-venv missing?); schema validation did not run"
            );
            return None;
        };
        Some(bin(&dir))
    })
    .clone()
}

pub struct Bins {
    pub proxy: PathBuf,
    pub controller: PathBuf,
}

/// Builds (once per process, same profile and target dir) and locates the binaries of other packages:
/// Cargo does not build them for this package's tests.
pub fn bins() -> &'static Bins {
    static BINS: OnceLock<Bins> = OnceLock::new();
    BINS.get_or_init(|| {
        let dir = svcnet_testcluster::siblings::build(&["svcnet-proxy", "svcnet-cloud-controller"])
            .unwrap_or_else(|e| panic!("building the binaries: {e}"));
        let b = Bins {
            proxy: dir.join("svcnet-proxy"),
            controller: dir.join("svcnet-cloud-controller"),
        };
        for p in [&b.proxy, &b.controller] {
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

/// The real control plane (etcd + kube-apiserver from testing/k8s; storing and serving manifests needs no
/// controllers, so kube-controller-manager is not started), stopped on drop.
pub struct ApiServer {
    pub cluster: Cluster,
}

impl ApiServer {
    pub fn start() -> Self {
        let cluster = Cluster::start_with(Options {
            controller_manager: false,
            ..Options::default()
        })
        .unwrap_or_else(|e| panic!("starting the control plane: {e}"));
        ApiServer { cluster }
    }

    /// The instance's directory (scratch files of a test go there too).
    pub fn dir(&self) -> &Path {
        self.cluster.dir()
    }

    /// The real kubectl as cluster admin, with the instance's own discovery cache and HOME.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.cluster
            .kubectl(args)
            .unwrap_or_else(|e| panic!("running kubectl: {e}"))
    }
}
