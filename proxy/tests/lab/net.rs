//! Network namespaces and the veth/bridge wiring of the lab. Namespaces are uniquely named
//! (`svcnet-t-<tag>-<pid>-<n>`), never linked to the root namespace, and deleted on drop.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{BRIDGE_IP, CLIENT_IP, CLIENT_IP2, NODE_IP};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub struct Ns {
    pub name: String,
}

impl Ns {
    pub fn new(tag: &str) -> Result<Ns, String> {
        let name = format!(
            "svcnet-t-{tag}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .map_err(|e| format!("ip: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "ip netns add {name}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let ns = Ns { name };
        ns.ok(&["ip", "link", "set", "lo", "up"]);
        Ok(ns)
    }

    /// A command that runs inside the namespace.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).args(args);
        c
    }

    /// Runs a command inside the namespace: (success, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.command(args).output().expect("spawn ip netns exec");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs a command that must succeed; returns its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "in {}: {args:?} failed: {err}{out}", self.name);
        out
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).status();
    }
}

/// The node namespace, or `None` with a SKIPPED line when namespaces cannot be created outside CI.
pub fn ns_or_skip(tag: &str) -> Option<Ns> {
    match Ns::new(tag) {
        Ok(ns) => Some(ns),
        Err(why) if std::env::var("CI").is_ok_and(|v| !v.is_empty()) => {
            panic!("network namespaces are required in CI but unavailable: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}

fn ip(ns: &Ns, args: &str) {
    let words: Vec<&str> = std::iter::once("ip").chain(args.split_whitespace()).collect();
    ns.ok(&words);
}

/// Node: eth0 toward the client, br0 for pods, forwarding on; client: two addresses, default route
/// via the node (so LB VIPs, external IPs and cluster IPs are routed to the node, as GCE does).
pub fn wire_node_and_client(node: &Ns, client: &Ns) {
    ip(
        node,
        &format!("link add eth0 type veth peer name eth0 netns {}", client.name),
    );
    ip(node, &format!("addr add {NODE_IP}/24 dev eth0"));
    ip(node, "link set eth0 up");
    ip(node, "link add br0 type bridge");
    ip(node, &format!("addr add {BRIDGE_IP}/24 dev br0"));
    ip(node, "link set br0 up");
    // The node needs a route for service IPs before DNAT (like any real node's default route).
    ip(node, &format!("route add default via {CLIENT_IP} dev eth0"));
    node.ok(&["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"]);
    ip(client, &format!("addr add {CLIENT_IP}/24 dev eth0"));
    ip(client, &format!("addr add {CLIENT_IP2}/24 dev eth0"));
    ip(client, "link set eth0 up");
    ip(client, &format!("route add default via {NODE_IP}"));
}

/// A pod behind br0 with `ip`/24 and the bridge as gateway.
pub fn wire_pod(node: &Ns, pod: &Ns, index: usize, pod_ip: &str) {
    let host_if = format!("vp{index}");
    ip(
        node,
        &format!("link add {host_if} type veth peer name eth0 netns {}", pod.name),
    );
    ip(node, &format!("link set {host_if} master br0 up"));
    // A pod reaching itself through a service IP comes back out of its own bridge port (kubelet sets
    // the same hairpin mode on its bridge ports).
    ip(node, &format!("link set {host_if} type bridge_slave hairpin on"));
    ip(pod, &format!("addr add {pod_ip}/24 dev eth0"));
    ip(pod, "link set eth0 up");
    ip(pod, &format!("route add default via {BRIDGE_IP}"));
}
