//! Starts the real svcnet-apiserver binary for a test and hands out clients for it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    child: Child,
    extra: Vec<String>,
}

impl Server {
    /// Starts on a free loopback port with the given extra flags.
    pub fn start(extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let (child, addr) = spawn(dir.path(), "127.0.0.1:0", &extra);
        Self {
            addr,
            dir,
            child,
            extra,
        }
    }

    /// Starts with a state file inside the test's temp dir.
    pub fn start_with_state(extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        extra.push("--state-file".into());
        extra.push(dir.path().join("state.json").display().to_string());
        let (child, addr) = spawn(dir.path(), "127.0.0.1:0", &extra);
        Self {
            addr,
            dir,
            child,
            extra,
        }
    }

    /// Kills the process (SIGKILL, no chance to flush anything) and starts it again on the same address.
    pub fn restart(&mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
        let (child, addr) = spawn(self.dir.path(), &self.addr.to_string(), &self.extra);
        assert_eq!(addr, self.addr);
        self.child = child;
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    pub async fn client(&self) -> kube::Client {
        svcnet_core::tls::install_crypto_provider();
        let kc = kube::config::Kubeconfig::read_from(self.kubeconfig()).expect("read kubeconfig");
        let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("kube config");
        kube::Client::try_from(cfg).expect("client")
    }

    /// Runs the real kubectl against this server with its own discovery cache.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_cmd(args).output().expect("run kubectl")
    }

    pub fn kubectl_cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.args(args)
            .env("KUBECONFIG", self.kubeconfig())
            .env("KUBECACHEDIR", self.dir.path().join("kube-cache"))
            .env("HOME", self.dir.path());
        c
    }

    /// kubectl that must succeed; returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).expect("write file");
        p
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(dir: &Path, listen: &str, extra: &[String]) -> (Child, SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut child = Command::new(env!("CARGO_BIN_EXE_svcnet-apiserver"))
            .arg("--listen")
            .arg(listen)
            .arg("--kubeconfig-out")
            .arg(dir.join("kubeconfig"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn svcnet-apiserver");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("read stdout");
        if let Some(addr) = line.trim().strip_prefix("listening on ") {
            return (child, addr.parse().expect("address"));
        }
        // A restart can race the old socket's release; retry briefly.
        let _ = child.wait();
        assert!(
            Instant::now() < deadline,
            "svcnet-apiserver did not start: {line:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn kubectl_available() -> bool {
    let found = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        println!("SKIPPED: kubectl not found");
    }
    found
}

/// Polls `f` until it returns true or the timeout passes.
pub async fn eventually(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
