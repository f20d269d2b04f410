//! Part U's timed work inside a node namespace (requests of the in-namespace agent): an API write
//! followed by connects until the proxy under test has made it live, a steady churn of endpoint
//! changes, and a probe for the first full sync.
//!
//! The write and the probe run in one process on one clock, so a latency is "API write sent ->
//! first connection that reaches the new endpoint", watch delivery, min-sync-period and the
//! restore all included. Misses are refused at once (every old endpoint and the service range are
//! local addresses nothing listens on), so a probe costs microseconds, and it sleeps
//! [`PROBE_INTERVAL`] between tries to leave the CPU to the proxy. A try that is neither accepted
//! nor refused (an nftables proxy drops SYNs to a cluster IP it has not programmed yet) is given up
//! after [`PROBE_CONNECT_TIMEOUT`]: waiting longer would add the wait, not the proxy's time, to
//! the figure.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http::request;
use crate::p4;

/// Pause between two probe connects: with the connect, the figure's resolution. A replaced endpoint
/// is one of 10 a try picks at random, so the first connection to it comes ~10 tries after it is
/// live; at 0.2 ms that is ~3 ms, and a refused try costs ~30 us of CPU.
pub const PROBE_INTERVAL: Duration = Duration::from_micros(200);
/// How long one try waits for an answer. A programmed connection is accepted within microseconds
/// (the listener is in the same namespace); a dropped SYN would be retransmitted only after 1 s.
pub const PROBE_CONNECT_TIMEOUT: Duration = Duration::from_millis(5);
/// The service port of every bench Service (p4's Services and the ones added here).
pub const SERVICE_PORT: u16 = 80;
/// The target port of every endpoint.
pub const ENDPOINT_PORT: u16 = 8080;

const SERVICES: &str = "/api/v1/namespaces/default/services";
const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";

fn parse<T: std::str::FromStr>(what: &str, v: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    v.parse().map_err(|e| format!("{what} {v:?}: {e}"))
}

/// Connects to `addr` until one succeeds or `limit` passes; returns the tries.
pub fn probe_until_live(addr: SocketAddr, limit: Duration) -> Result<u64, String> {
    let t0 = Instant::now();
    let mut tries = 0;
    loop {
        tries += 1;
        if TcpStream::connect_timeout(&addr, PROBE_CONNECT_TIMEOUT).is_ok() {
            return Ok(tries);
        }
        if t0.elapsed() > limit {
            return Err(format!("{addr} not live after {limit:?} ({tries} tries)"));
        }
        std::thread::sleep(PROBE_INTERVAL);
    }
}

fn cluster_ip(svc: &Value) -> Result<Ipv4Addr, String> {
    svc["spec"]["clusterIP"]
        .as_str()
        .ok_or("service without clusterIP")?
        .parse()
        .map_err(|e| format!("clusterIP: {e}"))
}

/// p4's EndpointSlice of service `i` with its first endpoint moved to `ip`.
pub fn slice_with_first(i: usize, endpoints: usize, ip: Ipv4Addr) -> Value {
    let mut s = p4::slice(i, endpoints);
    s["endpoints"][0]["addresses"] = json!([ip.to_string()]);
    s
}

/// A Service `name` (cluster IP allocated by the API server) and its slice with one endpoint.
pub fn one_endpoint_service(name: &str, ip: Ipv4Addr) -> (Value, Value) {
    let svc = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": ENDPOINT_PORT, "protocol": "TCP"}]}
    });
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("{name}-bench"), "namespace": "default",
                     "labels": {"kubernetes.io/service-name": name,
                                "endpointslice.kubernetes.io/managed-by": "svcnet-bench"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip.to_string()],
                       "conditions": {"ready": true, "serving": true, "terminating": false},
                       "nodeName": "other-0"}],
        "ports": [{"name": "http", "port": ENDPOINT_PORT, "protocol": "TCP"}]
    });
    (svc, slice)
}

fn write(api: &str, method: &str, path: &str, body: &Value) -> Result<Value, String> {
    let r = request(api, method, path, Some(body))
        .and_then(|r| r.ok(&format!("{method} {path}")))
        .map_err(|e| e.to_string())?;
    Ok(r.json())
}

/// `replace <api> <index> <endpoints> <new ip> <limit ms>`: moves the first endpoint of service
/// `index` to `new ip` (where the agent listens) and probes its cluster IP until a connection gets
/// there. Answers `<write ns> <live ns> <tries> <start>`, both from just before the write, which
/// started at `<start>` (microseconds since the Unix epoch, to line up with the proxy's log).
pub fn replace(api: &str, words: &[&str]) -> Result<String, String> {
    let [index, endpoints, ip, limit_ms] = words else {
        return Err("replace: expected <index> <endpoints> <ip> <limit ms>".into());
    };
    let i: usize = parse("index", index)?;
    let name = format!("svc-{i:05}");
    let svc = request(api, "GET", &format!("{SERVICES}/{name}"), None)
        .and_then(|r| r.ok("get service"))
        .map_err(|e| e.to_string())?
        .json();
    let vip = SocketAddr::new(cluster_ip(&svc)?.into(), SERVICE_PORT);
    let body = slice_with_first(i, parse("endpoints", endpoints)?, parse("ip", ip)?);
    let start = unix_us();
    let t0 = Instant::now();
    write(api, "PUT", &format!("{SLICES}/{name}-bench"), &body)?;
    let wrote = t0.elapsed();
    let tries = probe_until_live(vip, Duration::from_millis(parse("limit", limit_ms)?))?;
    Ok(format!(
        "{} {} {tries} {start}",
        wrote.as_nanos(),
        t0.elapsed().as_nanos()
    ))
}

/// Now, in microseconds since the Unix epoch.
fn unix_us() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

/// `add <api> <name> <ip> <limit ms>`: creates Service `name` and its one-endpoint slice; with a
/// limit above 0, probes until live and answers `<writes ns> <live ns> <tries> <cluster IP>
/// <Service POST ns> <start>` (as [`replace`]; the Service's POST answered after `<Service POST ns>`);
/// with 0 answers only the cluster IP.
pub fn add(api: &str, words: &[&str]) -> Result<String, String> {
    let [name, ip, limit_ms] = words else {
        return Err("add: expected <name> <ip> <limit ms>".into());
    };
    let limit: u64 = parse("limit", limit_ms)?;
    let (svc, slice) = one_endpoint_service(name, parse("ip", ip)?);
    let start = unix_us();
    let t0 = Instant::now();
    let created = write(api, "POST", SERVICES, &svc)?;
    let posted = t0.elapsed();
    write(api, "POST", SLICES, &slice)?;
    let wrote = t0.elapsed();
    let vip = cluster_ip(&created)?;
    if limit == 0 {
        return Ok(vip.to_string());
    }
    let tries = probe_until_live(
        SocketAddr::new(vip.into(), SERVICE_PORT),
        Duration::from_millis(limit),
    )?;
    Ok(format!(
        "{} {} {tries} {vip} {} {start}",
        wrote.as_nanos(),
        t0.elapsed().as_nanos(),
        posted.as_nanos()
    ))
}

/// `probe <ip:port> <limit ms>`: connects until one succeeds; answers the tries.
pub fn probe(words: &[&str]) -> Result<String, String> {
    let [addr, limit_ms] = words else {
        return Err("probe: expected <ip:port> <limit ms>".into());
    };
    let tries = probe_until_live(
        parse("address", addr)?,
        Duration::from_millis(parse("limit", limit_ms)?),
    )?;
    Ok(tries.to_string())
}

/// The address the `k`-th churn change of round `round` gives an endpoint: inside the endpoint
/// range (a local address nothing listens on), never one p4 loaded (those start at 10.128.0.1 and
/// stay below 10.144.0.0 up to 1M endpoints).
pub fn churn_ip(round: usize, k: usize) -> Ipv4Addr {
    let base = u32::from(Ipv4Addr::new(10, 160, 0, 0));
    let off = u32::try_from(round * 1_000_000 + k).unwrap_or(0) % (1 << 21);
    Ipv4Addr::from(base + off)
}

/// `churn <api> <round> <services> <endpoints> <changes> <per second>`: `changes` slice updates at
/// a steady rate, each moving the first endpoint of a service (spread over all `services`) to a new
/// address. Answers the wall time in nanoseconds.
pub fn churn(api: &str, words: &[&str]) -> Result<String, String> {
    let [round, services, endpoints, changes, per_s] = words else {
        return Err("churn: expected <round> <services> <endpoints> <changes> <per second>".into());
    };
    let round: usize = parse("round", round)?;
    let services: usize = parse("services", services)?;
    let endpoints: usize = parse("endpoints", endpoints)?;
    let changes: usize = parse("changes", changes)?;
    let per_s: f64 = parse("rate", per_s)?;
    if services == 0 || per_s <= 0.0 {
        return Err("churn: services and rate must be positive".into());
    }
    let t0 = Instant::now();
    for k in 0..changes {
        let due = Duration::from_secs_f64(k as f64 / per_s);
        if let Some(wait) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(wait);
        }
        // A stride coprime with most sizes spreads the changes over the whole table.
        let i = (k * 7919 + round * 131) % services;
        let body = slice_with_first(i, endpoints, churn_ip(round, k));
        write(api, "PUT", &format!("{SLICES}/svc-{i:05}-bench"), &body)?;
    }
    Ok(t0.elapsed().as_nanos().to_string())
}

#[cfg(test)]
mod tests;
