//! Test harness: starts the real binary on 127.0.0.1:0 and talks plain HTTP/1.1 to it.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use svcnet_testcluster::announce;
use svcnet_testcluster::http::{self, Request};

/// Bounds every request: an answer that never comes fails the test instead of hanging it.
const TIMEOUT: Duration = Duration::from_secs(120);

pub struct Fake {
    child: Child,
    pub port: u16,
    pub project: String,
    pub region: String,
    pub zones: Vec<String>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub const PROJECT: &str = "svcnet-e2e";
pub const REGION: &str = "us-central1";
pub const ZONE_B: &str = "us-central1-b";
pub const ZONE_C: &str = "us-central1-c";

impl Fake {
    pub fn start(extra: &[&str]) -> Fake {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_svcnet-fake-gce"));
        cmd.args([
            "--listen",
            "127.0.0.1:0",
            "--project",
            PROJECT,
            "--region",
            REGION,
        ])
        .args(["--zones", &format!("{ZONE_B},{ZONE_C}")])
        .args(extra)
        .stderr(Stdio::inherit());
        let (child, addr) = announce::spawn(&mut cmd, announce::FAKE_GCE)
            .unwrap_or_else(|e| panic!("starting svcnet-fake-gce: {e}"));
        let port = addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port");
        Fake {
            child,
            port,
            project: PROJECT.into(),
            region: REGION.into(),
            zones: vec![ZONE_B.into(), ZONE_C.into()],
        }
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `http://127.0.0.1:PORT/compute/v1/projects/P/` + rest.
    pub fn api(&self, rest: &str) -> String {
        format!("/compute/v1/projects/{}/{rest}", self.project)
    }

    pub fn link(&self, rest: &str) -> String {
        format!("{}{}", self.base(), self.api(rest))
    }

    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let body = body.map(Value::to_string);
        let (status, _, bytes) = raw(self.port, method, path, &[], body.as_deref().map(str::as_bytes));
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, None)
    }

    pub fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.call("POST", path, Some(body))
    }

    pub fn admin(&self, method: &str, what: &str, body: Option<&Value>) -> Value {
        let (status, v) = self.call(method, &format!("/_fake/{what}"), body);
        assert_eq!(status, 200, "admin {method} {what}: {v}");
        v
    }

    pub fn add_instance(&self, name: &str, zone: &str, tags: &[&str]) -> Value {
        self.admin(
            "POST",
            "instances",
            Some(&serde_json::json!({"name": name, "zone": zone, "tags": tags})),
        )
    }

    /// Polls an operation (by its selfLink) until DONE.
    pub fn wait_op(&self, op: &Value) -> Value {
        let link = op["selfLink"].as_str().expect("op selfLink");
        let path = &link[self.base().len()..];
        for _ in 0..200 {
            let (s, v) = self.get(path);
            assert_eq!(s, 200, "{v}");
            if v["status"] == "DONE" {
                return v;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("operation never finished: {op}");
    }

    /// Mutation that must be accepted; returns the finished operation.
    pub fn mutate_ok(&self, method: &str, path: &str, body: &Value) -> Value {
        let (s, op) = self.call(method, path, Some(body));
        assert_eq!(s, 200, "{method} {path}: {op}");
        assert_eq!(op["kind"], "compute#operation", "{op}");
        let done = self.wait_op(&op);
        assert!(done.get("error").is_none(), "{done}");
        done
    }
}

/// One HTTP/1.1 exchange with `Connection: close`; returns status, headers and body. `headers` may
/// replace the default `Content-Type: application/json`.
pub fn raw(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> (u16, String, Vec<u8>) {
    let req = Request::new(method, path, TIMEOUT)
        .with_headers(headers)
        .with_body(body.unwrap_or_default());
    let reply =
        http::request(&format!("127.0.0.1:{port}"), req).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    (reply.status, reply.head, reply.body)
}

/// Error reason of a Google-shaped error body.
pub fn reason(v: &Value) -> &str {
    v["error"]["errors"][0]["reason"].as_str().unwrap_or("")
}

/// Is `tool` runnable? (Used to print SKIPPED lines instead of passing silently.)
pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
