//! The lab's namespaces and the `ip` tool, on top of svcnet-netns (running commands, deleting a
//! namespace with what runs inside). Every namespace of a lab is named `<prefix>-<role>`, where the
//! prefix is unique per lab (`svcnet-lab-<hex>`), so `down` can find them all even without the state file.
//! These are not svcnet-netns guards on purpose: a lab outlives the `svcnet-lab up` process that made
//! it, so neither Drop nor a sweep by dead pid may remove it. Namespaces are never linked to the root
//! namespace: veth pairs are created directly between two lab namespaces (`ip -n A link add ... peer
//! ... netns B`).

use std::sync::RwLock;

use anyhow::{Context, Result, bail};

/// Creation is shut once the lab is being torn down on a signal (see [`stop_creating`]); a namespace
/// add holds the read side for its whole duration, so teardown never misses one made in the meantime.
static CREATING: RwLock<bool> = RwLock::new(true);

/// Runs a command to completion; an error carries its stderr.
pub fn run(args: &[&str]) -> Result<String> {
    Ok(svcnet_netns::run(args, None)?.stdout_if_ok()?)
}

/// Runs a command with `input` on stdin.
pub fn run_stdin(args: &[&str], input: &str) -> Result<String> {
    Ok(svcnet_netns::run(args, Some(input))?.stdout_if_ok()?)
}

/// Runs `args` inside namespace `ns`.
pub fn exec(ns: &str, args: &[&str]) -> Result<String> {
    Ok(svcnet_netns::exec(ns, args, None)?.stdout_if_ok()?)
}

/// `ip -n ns ...`
pub fn ip(ns: &str, args: &[&str]) -> Result<String> {
    let mut v = vec!["ip", "-n", ns];
    v.extend_from_slice(args);
    run(&v)
}

/// Creates the namespace with loopback up, forwarding on and reverse-path filtering off (the VPC routes
/// asymmetric LB traffic, like GCE's pass-through LB). Refused once the lab is being torn down.
pub fn add(ns: &str) -> Result<()> {
    let open = CREATING.read().unwrap_or_else(|e| e.into_inner());
    if !*open {
        bail!("not creating {ns}: the lab is being torn down");
    }
    run(&["ip", "netns", "add", ns])?;
    ip(ns, &["link", "set", "lo", "up"])?;
    for kv in [
        "net.ipv4.ip_forward=1",
        "net.ipv4.conf.all.rp_filter=0",
        "net.ipv4.conf.default.rp_filter=0",
    ] {
        exec(ns, &["sysctl", "-q", "-w", kv])?;
    }
    Ok(())
}

/// Refuses every later [`add`], after waiting for the ones under way: from here on, listing the lab's
/// namespaces finds all it will ever have.
pub fn stop_creating() {
    *CREATING.write().unwrap_or_else(|e| e.into_inner()) = false;
}

/// Deletes a namespace after killing every process still inside it.
pub fn del(ns: &str) {
    svcnet_netns::delete(ns);
}

/// Every namespace whose name starts with `prefix-`.
pub fn list(prefix: &str) -> Vec<String> {
    let mine = format!("{prefix}-");
    svcnet_netns::list()
        .into_iter()
        .filter(|n| n.starts_with(&mine))
        .collect()
}

/// A veth pair `a_if` in `a` <-> `b_if` in `b`, both up.
pub fn veth(a: &str, a_if: &str, b: &str, b_if: &str) -> Result<()> {
    ip(
        a,
        &[
            "link", "add", a_if, "type", "veth", "peer", "name", b_if, "netns", b,
        ],
    )?;
    ip(a, &["link", "set", a_if, "up"])?;
    ip(b, &["link", "set", b_if, "up"])?;
    Ok(())
}

/// Refuses to continue unless this process runs inside the named lab namespace (the agent rewrites the
/// filter table and routes of the namespace it runs in, so it must never run in the machine's own).
pub fn ensure_inside(ns: &str) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self/ns/net").context("stat /proc/self/ns/net")?;
    let want =
        std::fs::metadata(format!("/run/netns/{ns}")).with_context(|| format!("stat /run/netns/{ns}"))?;
    if (me.dev(), me.ino()) != (want.dev(), want.ino()) {
        bail!("refusing to run outside network namespace {ns}");
    }
    Ok(())
}
