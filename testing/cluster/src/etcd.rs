//! Talking to the instance's etcd directly, for fault injection the API cannot ask for: compaction
//! (what makes a watcher's old resourceVersion unservable, once the API server's watch cache has moved
//! on or restarted). Through etcd's JSON gateway (`/v3/kv/...`), plain HTTP on the instance's address.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{Value, json};

use crate::ClusterError;

/// POSTs `body` to `path` and returns the JSON answer; an etcd error (`{"error": ..}`) is an Err.
fn post(addr: SocketAddr, path: &str, body: &Value) -> Result<Value, ClusterError> {
    let what = format!("etcd {path}");
    let body = body.to_string();
    let mut s =
        TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(ClusterError::io(what.clone()))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(ClusterError::io(what.clone()))?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes())
        .map_err(ClusterError::io(what.clone()))?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(ClusterError::io(what.clone()))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, payload) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| ClusterError::Api(format!("{what}: no HTTP answer: {text}")))?;
    let payload = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        dechunk(payload)
    } else {
        payload.to_owned()
    };
    let v: Value =
        serde_json::from_str(&payload).map_err(|e| ClusterError::Api(format!("{what}: {e}: {payload}")))?;
    if let Some(err) = v.get("error").or_else(|| v.get("message")) {
        return Err(ClusterError::Api(format!("{what}: {err}")));
    }
    Ok(v)
}

/// The body of a chunked HTTP/1.1 answer.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// etcd's current revision (every write of the API server increments it).
pub fn revision(addr: SocketAddr) -> Result<i64, ClusterError> {
    // Any range request answers with the header; "Lw==" is the key "/" in base64.
    let v = post(
        addr,
        "/v3/kv/range",
        &json!({ "key": "Lw==", "count_only": true }),
    )?;
    v["header"]["revision"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .ok_or_else(|| ClusterError::Api(format!("etcd range: no header.revision in {v}")))
}

/// Compacts etcd's history up to `rev` (physically: old revisions are gone when this returns).
pub fn compact(addr: SocketAddr, rev: i64) -> Result<(), ClusterError> {
    post(
        addr,
        "/v3/kv/compaction",
        &json!({ "revision": rev.to_string(), "physical": true }),
    )
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::dechunk;

    #[test]
    fn dechunk_joins_chunks() {
        assert_eq!(dechunk("4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n"), "{\"a\":1}");
    }
}
