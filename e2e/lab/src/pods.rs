//! A pod as the lab runs it: a network namespace on its node's `cbr0` bridge (veth `p<uid>` <-> `eth0`,
//! the pod IP, default route via the bridge) running this binary's hidden `serve-hostname` (like the
//! walkthrough's serve_hostname image: answers its pod name over TCP (HTTP) and UDP). The agent, as the
//! node's kubelet, makes and removes them for the Pods bound to the node (`crate::kubelet`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::process::Child;
use std::time::Duration;

use anyhow::{Result, bail};
use svcnet_netns::link;

use crate::netns;
use crate::procs::{self, Process};
use crate::state::Node;

/// How long a SIGKILLed hostname server may take to exit before stopping its pod fails.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A pod's running hostname server.
pub struct Server {
    /// What `kubelet.json` records: how anyone, not only the agent that started it, stops it.
    pub process: Process,
    /// The agent's handle, to reap it.
    pub child: Child,
}

/// Creates the pod's namespace `ns` on `node`'s bridge with `ips` (IPv4, and IPv6 when the node has an
/// IPv6 podCIDR) and starts the hostname server answering `name` on `port`; link `bridge_port` is
/// the bridge side.
pub fn start(
    dir: &Path,
    node: &Node,
    ns: &str,
    bridge_port: &str,
    ips: (Ipv4Addr, Option<Ipv6Addr>),
    name: &str,
    port: u16,
) -> Result<Server> {
    let (ip, ip6) = ips;
    let (Some(gw), Some(prefix)) = (node.bridge_ip(), node.pod_cidr.split('/').nth(1)) else {
        bail!("node {} has no podCIDR yet", node.name);
    };
    netns::add(ns)?;
    link::veth(&node.ns, bridge_port, ns, "eth0")?;
    link::attach(&node.ns, "cbr0", bridge_port)?;
    link::addr(ns, "eth0", &format!("{ip}/{prefix}"))?;
    link::route(ns, "default", Some(&gw.to_string()), None)?;
    if let (Some(ip6), Some(gw6), Some(prefix6)) = (ip6, node.bridge_ip6(), node.pod_cidr6.split('/').nth(1))
    {
        link::addr(ns, "eth0", &format!("{ip6}/{prefix6}"))?;
        link::route(ns, "default", Some(&gw6.to_string()), None)?;
    }
    let args = vec![
        "serve-hostname".to_string(),
        "--name".into(),
        name.to_owned(),
        "--port".into(),
        port.to_string(),
    ];
    let mut child = procs::spawn_child(dir, ns, &format!("pod-{name}"), &std::env::current_exe()?, &args)?;
    match Process::of(child.id()) {
        Ok(process) => Ok(Server { process, child }),
        Err(e) => {
            // Unrecorded, nothing could stop it later.
            let _ = procs::kill_child(&mut child, STOP_TIMEOUT);
            Err(e)
        }
    }
}

/// Removes a pod: first its hostname server, killed and then reaped (`child`: the caller started it)
/// or waited for (`server`: another process did, e.g. an agent before a restart), then its namespace
/// with anything else inside (the bridge side of its veth goes with it). The server is stopped by pid,
/// not found through the namespace: the agent makes pod namespaces inside its own mount namespace
/// (`ip netns exec` gives it one), so elsewhere (`svcnet-lab down`) their names are empty files that
/// lead to no process. Nothing is deleted while the server may still run.
pub fn stop(ns: &str, server: Option<Process>, child: Option<Child>) -> Result<()> {
    match (child, server) {
        (Some(mut child), _) => procs::kill_child(&mut child, STOP_TIMEOUT)?,
        (None, Some(p)) => procs::kill_recorded(p, STOP_TIMEOUT)?,
        // No server recorded: its start failed half-way, before the server ran.
        (None, None) => {}
    }
    netns::del(ns);
    Ok(())
}

/// The pod's server, on both families (one dual-stack socket each: `[::]` takes IPv4 too, unless the
/// namespace has no IPv6): TCP answers an HTTP request (or any bytes) with the name and closes, except a
/// connection opened with `HOLD`, which stays open answering each line with the name (the takeover
/// step's long-lived connections); UDP echoes the name.
pub fn serve_hostname(name: &str, port: u16) -> Result<()> {
    let tcp = TcpListener::bind(("::", port)).or_else(|_| TcpListener::bind(("0.0.0.0", port)))?;
    let udp = UdpSocket::bind(("::", port)).or_else(|_| UdpSocket::bind(("0.0.0.0", port)))?;
    let uname = name.to_owned();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1500];
        while let Ok((_, peer)) = udp.recv_from(&mut buf) {
            let _ = udp.send_to(format!("{uname}\n").as_bytes(), peer);
        }
    });
    println!("serving {name} on :{port}");
    for conn in tcp.incoming() {
        let Ok(mut c) = conn else { continue };
        let body = format!("{name}\n");
        std::thread::spawn(move || {
            let _ = c.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let mut buf = [0u8; 4096];
            let n = c.read(&mut buf).unwrap_or(0);
            if buf[..n].starts_with(b"HOLD") {
                hold(c, &body);
                return;
            }
            let _ = c.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        });
    }
    Ok(())
}

/// Hold mode: the name for `HOLD` and for every line after it, until the client closes.
fn hold(c: TcpStream, name_line: &str) {
    let Ok(mut w) = c.try_clone() else { return };
    let _ = c.set_read_timeout(None);
    if w.write_all(name_line.as_bytes()).is_err() {
        return;
    }
    for line in BufReader::new(c).lines() {
        if line.is_err() || w.write_all(name_line.as_bytes()).is_err() {
            return;
        }
    }
}
