//! Helper mode of the test binary. The test file defines an ignored test named `helper` that calls
//! [`main`]; the lab runs `ip netns exec NS <this test binary> --exact helper --ignored --nocapture`
//! with `SVCNET_HELPER` set:
//! - `serve`: answer `"<SVCNET_NAME> <peer ip>\n"` to every TCP connection and UDP datagram on
//!   port 8080 (a tiny serve_hostname), on `0.0.0.0` and, with `SVCNET_IPV6=1`, also on `[::]` (the lab
//!   makes such pods' `[::]` sockets IPv6-only, so the IPv4 listeners are the same as without it);
//! - `client`: `SVCNET_PROTO` tcp|udp, `SVCNET_ADDR` ip:port, `SVCNET_COUNT` attempts, optional
//!   `SVCNET_BIND` source ip or ip:port (UDP only); prints one `@@ <reply>` or `@@ ERR <kind>` line per attempt;
//! - `http`: one HTTP/1.1 request (`SVCNET_METHOD`, `SVCNET_URL` = http://ip:port/path,
//!   `SVCNET_CT` content type, body on stdin); prints `@@CODE <status>` (0 when no connection), the
//!   body, and `@@END`. The lab needs no curl this way.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::Stdio;
use std::time::Duration;

use svcnet_testcluster::ClusterError;
use svcnet_testcluster::http::{self, Request};

use super::{Netns, POD_PORT, Proc};

const TIMEOUT: Duration = Duration::from_millis(1500);

/// Entry point of the `helper` test: does nothing unless `SVCNET_HELPER` is set.
pub fn main() {
    match std::env::var("SVCNET_HELPER").as_deref() {
        Ok("serve") => serve(
            &std::env::var("SVCNET_NAME").unwrap_or_default(),
            std::env::var("SVCNET_IPV6").is_ok_and(|v| v == "1"),
        ),
        Ok("client") => client(),
        Ok("http") => http_main(),
        _ => {}
    }
}

fn serve(name: &str, ipv6: bool) {
    let mut addrs = vec![SocketAddr::from(([0, 0, 0, 0], POD_PORT))];
    if ipv6 {
        addrs.push(SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, POD_PORT)));
    }
    let mut threads = Vec::new();
    for addr in addrs {
        let tcp = TcpListener::bind(addr).expect("bind tcp");
        let udp = UdpSocket::bind(addr).expect("bind udp");
        let n = name.to_string();
        std::thread::spawn(move || {
            let mut buf = [0u8; 1500];
            while let Ok((_, peer)) = udp.recv_from(&mut buf) {
                let _ = udp.send_to(format!("{n} {}\n", peer.ip()).as_bytes(), peer);
            }
        });
        let n = name.to_string();
        threads.push(std::thread::spawn(move || {
            for stream in tcp.incoming().flatten() {
                let mut s = stream;
                let peer = s.peer_addr().map(|p| p.ip().to_string()).unwrap_or_default();
                let _ = s.write_all(format!("{n} {peer}\n").as_bytes());
            }
        }));
    }
    for t in threads {
        let _ = t.join();
    }
}

fn classify(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "refused",
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => "timeout",
        std::io::ErrorKind::HostUnreachable | std::io::ErrorKind::NetworkUnreachable => "unreachable",
        _ => "other",
    }
}

fn client() {
    let proto = std::env::var("SVCNET_PROTO").unwrap_or_else(|_| "tcp".into());
    let addr: SocketAddr = std::env::var("SVCNET_ADDR")
        .expect("SVCNET_ADDR")
        .parse()
        .expect("SVCNET_ADDR ip:port");
    let count: usize = std::env::var("SVCNET_COUNT")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1);
    let bind = std::env::var("SVCNET_BIND").ok().map(|b| {
        if b.contains(':') {
            b.parse::<SocketAddr>().expect("SVCNET_BIND")
        } else {
            SocketAddr::new(b.parse().expect("SVCNET_BIND ip"), 0)
        }
    });
    for _ in 0..count {
        let started = std::time::SystemTime::now();
        let r = if proto == "udp" {
            udp_once(addr, bind)
        } else {
            tcp_once(addr, bind)
        };
        match r {
            Ok(reply) => println!("@@ {}", reply.trim()),
            // When it started (Unix ms), to line a failure up with the proxy's log.
            Err(e) => println!(
                "@@ ERR {} ({e}) at {}",
                classify(&e),
                started
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis())
            ),
        }
    }
}

fn tcp_once(addr: SocketAddr, bind: Option<SocketAddr>) -> std::io::Result<String> {
    // std cannot bind a TCP socket before connecting; source-address tests use UDP.
    if bind.is_some() {
        return Err(std::io::Error::other("SVCNET_BIND is only supported for udp"));
    }
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    s.set_read_timeout(Some(TIMEOUT))?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

fn udp_once(addr: SocketAddr, bind: Option<SocketAddr>) -> std::io::Result<String> {
    let any: std::net::IpAddr = if addr.is_ipv6() {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv4Addr::UNSPECIFIED.into()
    };
    let local = bind.unwrap_or_else(|| SocketAddr::new(any, 0));
    let s = UdpSocket::bind(local)?;
    s.set_read_timeout(Some(TIMEOUT))?;
    s.send_to(b"ping", addr)?;
    let mut buf = [0u8; 1500];
    let (n, _) = s.recv_from(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

fn helper_command(ns: &Netns) -> std::process::Command {
    let exe = std::env::current_exe().expect("current exe");
    let mut c = ns.command(&[
        exe.to_str().expect("utf-8 path"),
        "--exact",
        "helper",
        "--ignored",
        "--nocapture",
        "-q",
    ]);
    c.env("RUST_BACKTRACE", "0");
    c
}

/// Starts the hostname server in a pod namespace (also on IPv6 with `ipv6`).
pub fn spawn_server(ns: &Netns, name: &str, ipv6: bool) -> Proc {
    let child = helper_command(ns)
        .env("SVCNET_HELPER", "serve")
        .env("SVCNET_NAME", name)
        .env("SVCNET_IPV6", if ipv6 { "1" } else { "0" })
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server");
    Proc {
        name: format!("server {name}"),
        child,
    }
}

/// Runs the client `count` times from `ns`; one entry per attempt: the reply (`"pod1 10.244.1.1"`)
/// or `"ERR <kind> (...)"`.
pub fn request(ns: &Netns, proto: &str, addr: &str, count: usize, bind: Option<&str>) -> Vec<String> {
    let mut c = helper_command(ns);
    c.env("SVCNET_HELPER", "client")
        .env("SVCNET_PROTO", proto)
        .env("SVCNET_ADDR", addr)
        .env("SVCNET_COUNT", count.to_string());
    if let Some(b) = bind {
        c.env("SVCNET_BIND", b);
    }
    let out = c.output().expect("run client");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("@@ "))
        .map(str::to_string)
        .collect()
}

/// Starts `count` requests one after the other without waiting (see [`request`]); [`replies`]
/// collects them.
pub fn spawn_requests(ns: &Netns, proto: &str, addr: &str, count: usize) -> std::process::Child {
    let mut c = helper_command(ns);
    c.env("SVCNET_HELPER", "client")
        .env("SVCNET_PROTO", proto)
        .env("SVCNET_ADDR", addr)
        .env("SVCNET_COUNT", count.to_string())
        .stdout(Stdio::piped());
    c.spawn().expect("spawn client")
}

/// The replies of a client started by [`spawn_requests`], once it is done.
pub fn replies(child: std::process::Child) -> Vec<String> {
    let out = child.wait_with_output().expect("wait for client");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("@@ "))
        .map(str::to_string)
        .collect()
}

/// The pod names that answered (replies are "<pod> <peer>").
pub fn answered_by(replies: &[String]) -> std::collections::BTreeSet<String> {
    replies
        .iter()
        .filter(|r| !r.starts_with("ERR"))
        .filter_map(|r| r.split_whitespace().next().map(str::to_string))
        .collect()
}

fn http_main() {
    let method = std::env::var("SVCNET_METHOD").unwrap_or_else(|_| "GET".into());
    let url = std::env::var("SVCNET_URL").expect("SVCNET_URL");
    let ct = std::env::var("SVCNET_CT").unwrap_or_else(|_| "application/json".into());
    let mut body = Vec::new();
    if method != "GET" {
        let _ = std::io::stdin().read_to_end(&mut body);
    }
    match http_once(&method, &url, &ct, &body) {
        Ok((code, text)) => println!("@@CODE {code}\n{text}\n@@END"),
        Err(e) => println!("@@CODE 0 ({e})\n\n@@END"),
    }
}

/// One request with the harness's HTTP/1.1 client; connecting gives up after [`TIMEOUT`] (a dropped
/// SYN must not stall a poll), the answer may take 10 s.
fn http_once(method: &str, url: &str, ct: &str, body: &[u8]) -> Result<(u16, String), ClusterError> {
    let headers = [("Accept", "application/json, */*"), ("Content-Type", ct)];
    let reply = http::request_url(
        url,
        Request::new(method, "", Duration::from_secs(10))
            .with_connect_timeout(TIMEOUT)
            .with_headers(&headers)
            .with_body(body),
    )?;
    Ok((reply.status, reply.text()))
}

/// One HTTP request from inside `ns`: (status, body); status 0 when the connection failed.
pub fn http(ns: &Netns, method: &str, url: &str, content_type: &str, body: &str) -> (u16, String) {
    let mut child = helper_command(ns)
        .env("SVCNET_HELPER", "http")
        .env("SVCNET_METHOD", method)
        .env("SVCNET_URL", url)
        .env("SVCNET_CT", content_type)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn http helper");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(body.as_bytes());
    }
    let out = child.wait_with_output().expect("http helper");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some(i) = text.find("@@CODE ") else {
        return (0, text);
    };
    let after = &text[i + 7..];
    let (line, body) = after.split_once('\n').unwrap_or((after, ""));
    let code = line
        .split_whitespace()
        .next()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    // libtest prints its own lines around the helper's output: the body ends at the marker.
    let body = body.split("\n@@END").next().unwrap_or(body);
    (code, body.to_string())
}
