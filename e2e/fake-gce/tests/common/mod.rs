//! Test harness: starts the real binary on 127.0.0.1:0 and talks plain HTTP/1.1 to it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

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
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("start svcnet-fake-gce");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read listening line");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
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
        let v = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        };
        (status, v)
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

/// One HTTP/1.1 exchange with `Connection: close`; returns status, headers and body.
pub fn raw(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    let has_ct = headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !has_ct {
        req.push_str("Content-Type: application/json\r\n");
    }
    let body = body.unwrap_or_default();
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    s.write_all(req.as_bytes()).expect("write");
    s.write_all(body).expect("write body");
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).expect("read");
    let split = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = String::from_utf8_lossy(&resp[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let mut body = resp[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    (status, head, body)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(nl) = b.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&b[..nl]).trim(), 16).unwrap_or(0);
        if size == 0 || b.len() < nl + 2 + size + 2 {
            break;
        }
        out.extend_from_slice(&b[nl + 2..nl + 2 + size]);
        b = &b[nl + 2 + size + 2..];
    }
    out
}

/// Error reason of a Google-shaped error body.
pub fn reason(v: &Value) -> &str {
    v["error"]["errors"][0]["reason"].as_str().unwrap_or("")
}

/// The target directory (for caches such as the Python venv).
pub fn target_dir() -> std::path::PathBuf {
    if let Ok(d) = std::env::var("CARGO_TARGET_DIR") {
        return d.into();
    }
    // .../target/debug/svcnet-fake-gce -> .../target
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_svcnet-fake-gce"));
    exe.parent()
        .and_then(|p| p.parent())
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
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
