//! HTTP for the control-plane parts (C1, C2, P4): the fake GCE's admin API, the API server and the
//! proxy's metrics, one request per connection through the harness client
//! (`svcnet_testcluster::http`), plus a reader for watch streams, which only the bench keeps open.
//! Nothing here leaves 127.0.0.1 (or the loopback of a bench namespace, when run inside one).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;
use svcnet_testcluster::ClusterError;
use svcnet_testcluster::http::{self, Reply, Request};

use crate::error::BenchError;

/// Bounds each request: a listing of tens of thousands of objects takes seconds, a stuck server
/// must still end the run.
const TIMEOUT: Duration = Duration::from_secs(120);

fn connect(addr: &str) -> Result<TcpStream, BenchError> {
    let s = TcpStream::connect(addr).map_err(|e| BenchError::io(format!("connect {addr}"), e))?;
    let _ = s.set_nodelay(true);
    Ok(s)
}

/// `method path` with an optional body of `content_type`.
pub fn request_typed(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<(&str, &[u8])>,
) -> Result<Reply, ClusterError> {
    let req = Request::new(method, path, TIMEOUT);
    let headers;
    let req = match body {
        Some((content_type, bytes)) => {
            headers = [("Content-Type", content_type)];
            req.with_headers(&headers).with_body(bytes)
        }
        None => req,
    };
    http::request(addr, req)
}

/// `method path` with an optional JSON body.
pub fn request(addr: &str, method: &str, path: &str, body: Option<&Value>) -> Result<Reply, ClusterError> {
    let text = body.map(Value::to_string);
    request_typed(
        addr,
        method,
        path,
        text.as_deref().map(|t| ("application/json", t.as_bytes())),
    )
}

pub fn get_json(addr: &str, path: &str) -> Result<Value, ClusterError> {
    Ok(request(addr, "GET", path, None)?
        .ok(&format!("GET {path}"))?
        .json())
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
    s.write_all(Request::new("GET", path, timeout).head(addr).as_bytes())
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
