//! A tiny blocking HTTP/1.1 client for tests and test tools: one request per connection
//! (`Connection: close`), Content-Length or chunked answers. It talks to the servers the harness starts
//! (etcd's JSON gateway, the fake GCE, `kubectl proxy`, svcnet's health and metrics ports) on loopback
//! or inside a test's own network namespace, where pulling in an async HTTP stack would only slow the
//! build and hide what goes over the wire.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::Value;

use crate::ClusterError;

/// One request. `headers` may override the defaults (`Accept` and `Content-Type`, both
/// `application/json`); `Host`, `Connection` and `Content-Length` are always written here.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: &'a [u8],
    /// Bounds each write and each read.
    pub timeout: Duration,
    /// Bounds connecting; a probe that polls an address which may drop packets wants it short.
    pub connect_timeout: Duration,
}

impl<'a> Request<'a> {
    /// `method path` without body or extra headers; `timeout` bounds connecting too.
    pub fn new(method: &'a str, path: &'a str, timeout: Duration) -> Self {
        Request {
            method,
            path,
            headers: &[],
            body: &[],
            timeout,
            connect_timeout: timeout,
        }
    }

    /// The same request giving up connecting after `connect_timeout`.
    pub fn with_connect_timeout(self, connect_timeout: Duration) -> Self {
        Request {
            connect_timeout,
            ..self
        }
    }

    /// The same request carrying `body`.
    pub fn with_body(self, body: &'a [u8]) -> Self {
        Request { body, ..self }
    }

    /// The same request with `headers` (see [`Request`] for what they may override).
    pub fn with_headers(self, headers: &'a [(&'a str, &'a str)]) -> Self {
        Request { headers, ..self }
    }

    /// The request head as it goes on the wire (also for a caller that reads a stream itself).
    pub fn head(&self, host: &str) -> String {
        let given = |name: &str| self.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n",
            self.method, self.path
        );
        for (default, value) in [
            ("Accept", "application/json"),
            ("Content-Type", "application/json"),
        ] {
            if !given(default) {
                head.push_str(&format!("{default}: {value}\r\n"));
            }
        }
        for (k, v) in self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", self.body.len()));
        head
    }
}

/// An answer: status, the head as text (status line and headers) and the body, de-chunked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; `Null` when it is empty or not JSON (callers assert on fields, and a missing
    /// field then reads as the answer it was).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Ok when 2xx, else an error naming `what` with the status and the start of the body.
    pub fn ok(self, what: &str) -> Result<Reply, ClusterError> {
        if self.is_success() {
            Ok(self)
        } else {
            Err(ClusterError::Http {
                what: what.to_owned(),
                status: self.status,
                body: self.text().chars().take(400).collect(),
            })
        }
    }
}

/// Sends `req` to `addr` (`host:port`, also the `Host` header) and reads the whole answer.
pub fn request(addr: &str, req: Request<'_>) -> Result<Reply, ClusterError> {
    let what = format!("{} http://{addr}{}", req.method, req.path);
    let sock = resolve(addr).map_err(ClusterError::io(what.clone()))?;
    let raw = exchange(sock, addr, &req).map_err(ClusterError::io(what.clone()))?;
    parse_reply(&raw).ok_or_else(|| ClusterError::Api(format!("{what}: malformed reply")))
}

/// [`request`] to an `http://host[:port]/path` URL (port 80 when none is given); `req.path` is ignored.
pub fn request_url(url: &str, req: Request<'_>) -> Result<Reply, ClusterError> {
    let (host, path) =
        split_url(url).ok_or_else(|| ClusterError::Api(format!("only http:// URLs: {url}")))?;
    let addr = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:80")
    };
    // Host keeps the URL's spelling, as a browser or curl would send it.
    let what = format!("{} {url}", req.method);
    let sock = resolve(&addr).map_err(ClusterError::io(what.clone()))?;
    let raw = exchange(sock, host, &Request { path, ..req }).map_err(ClusterError::io(what.clone()))?;
    parse_reply(&raw).ok_or_else(|| ClusterError::Api(format!("{what}: malformed reply")))
}

/// `http://host[:port]/path` -> (`host[:port]`, `/path`); `/` when the URL has no path.
pub fn split_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("http://")?;
    Some(match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    })
}

fn resolve(addr: &str) -> std::io::Result<SocketAddr> {
    addr.to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("no address for {addr}")))
}

fn exchange(sock: SocketAddr, host: &str, req: &Request<'_>) -> std::io::Result<Vec<u8>> {
    let mut s = TcpStream::connect_timeout(&sock, req.connect_timeout)?;
    s.set_read_timeout(Some(req.timeout))?;
    s.set_write_timeout(Some(req.timeout))?;
    // Head and body go out in separate writes; without NODELAY the second waits for the delayed ACK.
    s.set_nodelay(true)?;
    s.write_all(req.head(host).as_bytes())?;
    s.write_all(req.body)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    Ok(raw)
}

/// Splits a complete HTTP/1.1 answer into status, head and body (a chunked body is decoded); None when
/// the head is incomplete or has no numeric status.
pub fn parse_reply(raw: &[u8]) -> Option<Reply> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let body = &raw[split + 4..];
    let body = if is_chunked(&head) {
        dechunk(body)
    } else {
        body.to_vec()
    };
    Some(Reply { status, head, body })
}

/// Whether the head declares `Transfer-Encoding: chunked`.
fn is_chunked(head: &str) -> bool {
    head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    })
}

/// The payload of a chunked body: stops at the last chunk, or before a chunk that is cut short or
/// whose size does not parse. Chunk extensions (`;name=value`) are ignored.
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

#[cfg(test)]
mod tests;
