//! A minimal blocking HTTP/1.1 client over loopback for the control-plane parts (C1, C2, P4):
//! the fake GCE's admin API and the proxy's metrics. One connection per request
//! (`Connection: close`), plus a line-by-line reader for watch streams. Nothing here leaves
//! 127.0.0.1 (or the loopback of a bench namespace, when run inside one).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

use crate::error::BenchError;

/// One reply: status and the (de-chunked) body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Ok when 2xx, else an error naming `what` with the body.
    pub fn ok(self, what: &str) -> Result<Reply, BenchError> {
        if (200..300).contains(&self.status) {
            Ok(self)
        } else {
            Err(BenchError::Check(format!(
                "{what}: HTTP {}: {}",
                self.status,
                self.text().chars().take(400).collect::<String>()
            )))
        }
    }
}

fn connect(addr: &str) -> Result<TcpStream, BenchError> {
    let s = TcpStream::connect(addr).map_err(|e| BenchError::io(format!("connect {addr}"), e))?;
    let _ = s.set_nodelay(true);
    Ok(s)
}

fn request_head(method: &str, addr: &str, path: &str, content_type: &str, len: usize) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/json\r\n\
         Content-Type: {content_type}\r\nContent-Length: {len}\r\n\r\n"
    )
}

/// `method path` with an optional body of `content_type`.
pub fn request_typed(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<(&str, &[u8])>,
) -> Result<Reply, BenchError> {
    let mut s = connect(addr)?;
    let (ct, bytes) = body.unwrap_or(("application/json", &[]));
    let what = || format!("{method} http://{addr}{path}");
    s.write_all(request_head(method, addr, path, ct, bytes.len()).as_bytes())
        .and_then(|()| s.write_all(bytes))
        .map_err(|e| BenchError::io(what(), e))?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| BenchError::io(what(), e))?;
    parse_reply(&raw).ok_or_else(|| BenchError::Check(format!("{}: malformed reply", what())))
}

/// `method path` with an optional JSON body.
pub fn request(addr: &str, method: &str, path: &str, body: Option<&Value>) -> Result<Reply, BenchError> {
    let text = body.map(Value::to_string);
    request_typed(
        addr,
        method,
        path,
        text.as_deref().map(|t| ("application/json", t.as_bytes())),
    )
}

pub fn get_json(addr: &str, path: &str) -> Result<Value, BenchError> {
    Ok(request(addr, "GET", path, None)?
        .ok(&format!("GET {path}"))?
        .json())
}

/// Splits a complete HTTP/1.1 response into status and body (chunked bodies are decoded).
pub fn parse_reply(raw: &[u8]) -> Option<Reply> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let body = &raw[split + 4..];
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.to_ascii_lowercase().contains("chunked")
    });
    let body = if chunked { dechunk(body) } else { body.to_vec() };
    Some(Reply { status, body })
}

/// Decodes a chunked body (stops at the last-chunk or at a truncated chunk).
pub fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(nl) = b.windows(2).position(|w| w == b"\r\n") {
        let size_field = String::from_utf8_lossy(&b[..nl]);
        let size_hex = size_field.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_hex, 16) else {
            break;
        };
        if size == 0 || b.len() < nl + 2 + size {
            break;
        }
        out.extend_from_slice(&b[nl + 2..nl + 2 + size]);
        b = b.get(nl + 2 + size + 2..).unwrap_or_default();
    }
    out
}

/// Opens a watch (`GET path`, a streaming response of newline-delimited JSON) and calls `on_event`
/// with each decoded event until it returns false, the stream ends, or `timeout` passes without
/// data. Chunk framing is stripped by reading chunk sizes; events may span chunks.
pub fn watch(
    addr: &str,
    path: &str,
    timeout: Duration,
    mut on_event: impl FnMut(Value) -> bool,
) -> Result<(), BenchError> {
    let mut s = connect(addr)?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| BenchError::io("watch read timeout", e))?;
    s.write_all(request_head("GET", addr, path, "application/json", 0).as_bytes())
        .map_err(|e| BenchError::io(format!("watch {path}"), e))?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    let mut chunked = false;
    // Head.
    loop {
        line.clear();
        if r.read_line(&mut line)
            .map_err(|e| BenchError::io("watch head", e))?
            == 0
        {
            return Err(BenchError::Check(format!("watch {path}: connection closed")));
        }
        let l = line.trim_end().to_ascii_lowercase();
        if l.starts_with("transfer-encoding:") && l.contains("chunked") {
            chunked = true;
        }
        if l.is_empty() {
            break;
        }
    }
    let mut pending = Vec::new();
    loop {
        let data = if chunked {
            line.clear();
            if r.read_line(&mut line)
                .map_err(|e| BenchError::io("watch chunk", e))?
                == 0
            {
                return Ok(());
            }
            let Ok(size) = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16) else {
                continue;
            };
            if size == 0 {
                return Ok(());
            }
            let mut buf = vec![0; size + 2];
            r.read_exact(&mut buf)
                .map_err(|e| BenchError::io("watch chunk body", e))?;
            buf.truncate(size);
            buf
        } else {
            let mut buf = Vec::new();
            if r.read_until(b'\n', &mut buf)
                .map_err(|e| BenchError::io("watch line", e))?
                == 0
            {
                return Ok(());
            }
            buf
        };
        pending.extend_from_slice(&data);
        while let Some(nl) = pending.iter().position(|b| *b == b'\n') {
            let rest = pending.split_off(nl + 1);
            let ev: Value = serde_json::from_slice(&pending).unwrap_or(Value::Null);
            pending = rest;
            if !ev.is_null() && !on_event(ev) {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests;
