//! The proxy under test in the lab: starting and stopping the real binary in the node namespace, and
//! what it leaves to look at (its log and sync count, the payloads it wrote, its metrics).

use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{Lab, NODE, Proc, helper, proxy_binary};

impl Lab {
    pub fn start_proxy(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("proxy.log"))
            .expect("log");
        let mut cmd = self
            .node
            .command(&[proxy_binary().to_str().expect("utf-8 path"), "run"]);
        cmd.args([
            "--kubeconfig",
            self.kubeconfig.to_str().expect("utf-8"),
            "--hostname-override",
            NODE,
            "--cluster-cidr",
            if self.opts.ipv6 {
                "10.244.0.0/16,fd00:10:244::/56"
            } else {
                "10.244.0.0/16"
            },
            "--iptables-min-sync-period",
            self.opts.min_sync,
            "--iptables-sync-period",
            self.opts.sync_period,
            "--write-payloads",
            self.payload_dir().to_str().expect("utf-8"),
            "--log-level",
            "info,svcnet_proxy=debug",
        ])
        .args(&self.opts.extra_args)
        .stdout(Stdio::null())
        .stderr(log);
        if let Some(prefix) = &self.opts.path_prefix {
            let path = std::env::var("PATH").unwrap_or_default();
            cmd.env("PATH", format!("{}:{path}", prefix.display()));
        }
        let child = cmd.spawn().expect("spawn svcnet-proxy");
        self.proxy = Some(Proc {
            name: "proxy".into(),
            child,
        });
    }

    pub fn stop_proxy(&mut self) {
        if let Some(mut p) = self.proxy.take() {
            p.kill();
        }
    }

    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    /// Number of "synced" log lines so far.
    pub fn syncs(&self) -> usize {
        self.log("proxy.log")
            .lines()
            .filter(|l| l.contains("synced"))
            .count()
    }

    pub(super) fn wait_first_sync(&mut self) {
        let start = Instant::now();
        loop {
            if self.syncs() > 0 {
                return;
            }
            let alive = self.proxy.as_mut().is_some_and(Proc::alive);
            assert!(alive, "svcnet-proxy exited; log:\n{}", self.log("proxy.log"));
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no first sync within 30s; log:\n{}",
                self.log("proxy.log")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Payload files written so far, sorted: (file name, content).
    pub fn payloads(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = std::fs::read_dir(self.payload_dir())
            .expect("payload dir")
            .flatten()
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read_to_string(e.path()).unwrap_or_default(),
                )
            })
            .collect();
        v.sort();
        v
    }

    /// GET on the proxy's metrics endpoint (inside the node namespace).
    pub fn metrics(&self) -> String {
        helper::http(
            &self.node,
            "GET",
            "http://127.0.0.1:10249/metrics",
            "text/plain",
            "",
        )
        .1
    }

    /// The value of one metric sample line (exact name with labels), 0 when absent.
    pub fn metric(&self, sample: &str) -> f64 {
        self.metrics()
            .lines()
            .find_map(|l| l.strip_prefix(sample).and_then(|r| r.trim().parse().ok()))
            .unwrap_or(0.0)
    }
}
