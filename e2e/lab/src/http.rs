//! The lab's own calls to the API server (through `kubectl proxy`), etcd's JSON gateway and the fake
//! GCE over the harness's HTTP/1.1 client (`svcnet_testcluster::http`), and the `http` helper
//! subcommand that makes them from inside a lab namespace (those servers listen on lab addresses the
//! root namespace cannot reach).

use std::io::{Read, Write};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use serde_json::Value;
use svcnet_testcluster::http::{self, Request};

/// One request; returns (status, body).
pub fn request(
    method: &str,
    url: &str,
    content_type: &str,
    body: &str,
    timeout: Duration,
) -> Result<(u16, String)> {
    let headers = [("Content-Type", content_type)];
    let reply = http::request_url(
        url,
        Request::new(method, "", timeout)
            .with_headers(&headers)
            .with_body(body.as_bytes()),
    )?;
    Ok((reply.status, reply.text()))
}

/// A GET's status and response head (status line and headers), for a health check's headers.
pub fn get_head(url: &str, timeout: Duration) -> Result<(u16, String)> {
    let reply = http::request_url(url, Request::new("GET", "", timeout))?;
    Ok((reply.status, reply.head))
}

/// JSON request that must succeed (2xx).
pub fn json(method: &str, url: &str, content_type: &str, body: Option<&Value>) -> Result<Value> {
    let text = body.map(Value::to_string).unwrap_or_default();
    let (code, reply) = request(method, url, content_type, &text, Duration::from_secs(10))?;
    if !(200..300).contains(&code) {
        return Err(anyhow!("{method} {url}: {code} {reply}"));
    }
    Ok(serde_json::from_str(&reply).unwrap_or(Value::Null))
}

/// One request made from inside namespace `ns` by re-running this binary there (`svcnet-lab http`).
pub fn request_in(
    ns: &str,
    method: &str,
    url: &str,
    content_type: &str,
    body: &str,
) -> Result<(u16, String)> {
    let exe = std::env::current_exe().context("current exe")?;
    let mut child = svcnet_netns::command(ns, &[])
        .arg(exe)
        .args(["http", method, url, "--content-type", content_type])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("spawn svcnet-lab http")?;
    if let Some(mut s) = child.stdin.take() {
        s.write_all(body.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(anyhow!(
            "{method} {url} from {ns}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (code, body) = text.split_once('\n').unwrap_or((&text, ""));
    Ok((code.trim().parse().unwrap_or(0), body.to_owned()))
}

/// JSON request from inside `ns` that must succeed (2xx).
pub fn json_in(ns: &str, method: &str, url: &str, content_type: &str, body: Option<&Value>) -> Result<Value> {
    let text = body.map(Value::to_string).unwrap_or_default();
    let (code, reply) = request_in(ns, method, url, content_type, &text)?;
    if !(200..300).contains(&code) {
        return Err(anyhow!("{method} {url}: {code} {reply}"));
    }
    Ok(serde_json::from_str(&reply).unwrap_or(Value::Null))
}

/// The `http` subcommand: body from stdin, prints the status line then the body.
pub fn main(method: &str, url: &str, content_type: &str, timeout_s: u64) -> Result<()> {
    let mut body = String::new();
    if method != "GET" {
        std::io::stdin().read_to_string(&mut body)?;
    }
    let (code, reply) = request(method, url, content_type, &body, Duration::from_secs(timeout_s))?;
    println!("{code}\n{reply}");
    Ok(())
}
