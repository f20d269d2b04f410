//! The `ip` plumbing every harness wires its own topology from: veth pairs between two namespaces,
//! bridges and their ports, addresses, routes and the per-namespace sysctls of a router.
//!
//! Plain functions over namespace names, so the guards ([`crate::Netns`]) and the lab's persistent
//! namespaces use the same ones. Every command runs as `ip -n <ns>` or inside `<ns>`: none of them can
//! touch the root namespace, and a veth peer is moved into its namespace as it is created.

use crate::NetnsError;

/// `ip -n <ns> <args...>`: its stdout, or [`NetnsError::Failed`] with what it said.
pub fn ip(ns: &str, args: &[&str]) -> Result<String, NetnsError> {
    let mut all = vec!["ip", "-n", ns];
    all.extend_from_slice(args);
    crate::run(&all, None)?.stdout_if_ok()
}

/// Sets link `dev` up.
pub fn up(ns: &str, dev: &str) -> Result<(), NetnsError> {
    ip(ns, &["link", "set", dev, "up"]).map(drop)
}

/// A veth pair, both ends up: `a_if` in namespace `a`, its peer `b_if` in namespace `b` (which may be
/// `a` itself, for a link that only carries addresses).
pub fn veth(a: &str, a_if: &str, b: &str, b_if: &str) -> Result<(), NetnsError> {
    ip(
        a,
        &[
            "link", "add", a_if, "type", "veth", "peer", "name", b_if, "netns", b,
        ],
    )?;
    up(a, a_if)?;
    up(b, b_if)
}

/// Adds `cidr` (`address/prefix`) to `dev`. An IPv6 address is added `nodad`: every link is the
/// harness's own, so no duplicate can exist, and duplicate address detection would leave the address
/// tentative (unusable as a source) for the first second or more.
pub fn addr(ns: &str, dev: &str, cidr: &str) -> Result<(), NetnsError> {
    let mut args = vec!["addr", "add", cidr, "dev", dev];
    if is_ipv6(cidr) {
        args.push("nodad");
    }
    ip(ns, &args).map(drop)
}

/// A bridge `name`, up and without addresses (some harnesses only learn its address later, from the
/// node's podCIDR).
pub fn bridge(ns: &str, name: &str) -> Result<(), NetnsError> {
    ip(ns, &["link", "add", name, "type", "bridge"])?;
    up(ns, name)
}

/// Makes link `port` (already up, e.g. by [`veth`]) a port of `bridge`.
pub fn attach(ns: &str, bridge: &str, port: &str) -> Result<(), NetnsError> {
    ip(ns, &["link", "set", port, "master", bridge]).map(drop)
}

/// Hairpin mode on bridge port `port`, as kubelet sets it on its pods' ports: a frame may leave
/// through the port it came in on, so a pod that reaches itself through a service IP gets its answer.
pub fn hairpin(ns: &str, port: &str) -> Result<(), NetnsError> {
    ip(
        ns,
        &["link", "set", port, "type", "bridge_slave", "hairpin", "on"],
    )
    .map(drop)
}

/// `ip route add <dest> [via <via>] [dev <dev>]`, in the IPv6 table when `dest` or `via` is an IPv6
/// address (`default` alone would mean the IPv4 one).
pub fn route(ns: &str, dest: &str, via: Option<&str>, dev: Option<&str>) -> Result<(), NetnsError> {
    let family = if is_ipv6(dest) || via.is_some_and(is_ipv6) {
        "-6"
    } else {
        "-4"
    };
    let mut args = vec![family, "route", "add", dest];
    if let Some(via) = via {
        args.extend(["via", via]);
    }
    if let Some(dev) = dev {
        args.extend(["dev", dev]);
    }
    ip(ns, &args).map(drop)
}

/// Makes every address of `cidr` local on `dev` (`route add local`): a connection to any of them is
/// accepted or refused in this namespace, never routed on.
pub fn local_route(ns: &str, cidr: &str, dev: &str) -> Result<(), NetnsError> {
    ip(ns, &["route", "add", "local", cidr, "dev", dev]).map(drop)
}

/// Sets sysctl `key` (dotted, `net.ipv4.ip_forward`) to `value` inside `ns`: the `net.*` sysctls are
/// per namespace, so this is written from inside it. Through `sh` rather than the `sysctl` program,
/// which not every test machine has; the values are arguments, never part of the script.
pub fn sysctl(ns: &str, key: &str, value: &str) -> Result<(), NetnsError> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    let script = r#"echo "$1" > "$2""#;
    crate::exec(ns, &["sh", "-c", script, "sh", value, &path], None)?
        .stdout_if_ok()
        .map(drop)
}

/// IPv4 forwarding on: the namespace routes between its links (a node, a router).
pub fn forward_ipv4(ns: &str) -> Result<(), NetnsError> {
    sysctl(ns, "net.ipv4.ip_forward", "1")
}

/// IPv6 forwarding on, for every link of the namespace.
pub fn forward_ipv6(ns: &str) -> Result<(), NetnsError> {
    sysctl(ns, "net.ipv6.conf.all.forwarding", "1")
}

fn is_ipv6(address: &str) -> bool {
    address.contains(':')
}
