//! A tiny blocking HTTP/1.1 client (one request per connection) for the lab's own calls to the API
//! server (through `kubectl proxy`), etcd's JSON gateway and the fake GCE, and the `http` helper
//! subcommand that runs it inside a lab namespace (those servers listen on lab addresses the root
//! namespace cannot reach).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use serde_json::Value;

/// One request; returns (status, body).
pub fn request(
    method: &str,
    url: &str,
    content_type: &str,
    body: &str,
    timeout: Duration,
) -> Result<(u16, String)> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("only http:// URLs: {url}"))?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let with_port = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:80")
    };
    let addr = with_port
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| anyhow!("no address for {host}"))?;
    let mut s = TcpStream::connect_timeout(&addr, timeout).with_context(|| format!("connect {host}"))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_nodelay(true)?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nAccept: application/json\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, rest) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("malformed reply from {url}"))?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("no status from {url}"))?;
    let chunked = head
        .lines()
        .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding: chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_owned() };
    Ok((status, body))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
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
    let mut child = std::process::Command::new("ip")
        .args(["netns", "exec", ns])
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
