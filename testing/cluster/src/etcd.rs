//! Talking to the instance's etcd directly, for fault injection the API cannot ask for: compaction
//! (what makes a watcher's old resourceVersion unservable, once the API server's watch cache has moved
//! on or restarted). Through etcd's JSON gateway (`/v3/kv/...`), plain HTTP on the instance's address.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};

use crate::ClusterError;
use crate::http::{self, Request};

/// POSTs `body` to `path` and returns the JSON answer; an etcd error (`{"error": ..}`) is an Err.
fn post(addr: SocketAddr, path: &str, body: &Value) -> Result<Value, ClusterError> {
    let what = format!("etcd {path}");
    let body = body.to_string();
    let reply = http::request(
        &addr.to_string(),
        Request::new("POST", path, Duration::from_secs(30))
            .with_connect_timeout(Duration::from_secs(5))
            .with_body(body.as_bytes()),
    )?;
    let v: Value = serde_json::from_slice(&reply.body)
        .map_err(|e| ClusterError::Api(format!("{what}: {e}: {}", reply.text())))?;
    if let Some(err) = v.get("error").or_else(|| v.get("message")) {
        return Err(ClusterError::Api(format!("{what}: {err}")));
    }
    Ok(v)
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
