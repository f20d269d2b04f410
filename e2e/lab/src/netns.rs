//! The lab's namespaces, on top of svcnet-netns (creating one, running commands, deleting one with
//! what runs inside; the wiring steps are `svcnet_netns::link`'s, the GCE-like instance link is here).
//! Every namespace of a lab is named `<prefix>-<role>`, where the prefix is unique per lab
//! (`svcnet-lab-<hex>`), so `down` can find them all even without the state file.
//! These are not svcnet-netns guards on purpose: a lab outlives the `svcnet-lab up` process that made
//! it, so neither Drop nor a sweep by dead pid may remove it. Namespaces are never linked to the root
//! namespace: veth pairs are created directly between two lab namespaces (`ip -n A link add ... peer
//! ... netns B`).

use std::sync::RwLock;

use anyhow::{Context, Result, bail};
use svcnet_netns::link;

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

/// Creates the namespace with loopback up, forwarding on (both families) and reverse-path filtering
/// off (the VPC routes asymmetric LB traffic, like GCE's pass-through LB). Refused once the lab is
/// being torn down.
pub fn add(ns: &str) -> Result<()> {
    let open = CREATING.read().unwrap_or_else(|e| e.into_inner());
    if !*open {
        bail!("not creating {ns}: the lab is being torn down");
    }
    svcnet_netns::add(ns)?;
    link::forward_ipv4(ns)?;
    link::forward_ipv6(ns)?;
    for key in ["net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter"] {
        link::sysctl(ns, key, "0")?;
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

/// Links `host` to `router` as GCE links an instance to its VPC: veth `router_if` <-> `eth0`, the
/// host's `host_ip` as a /32 with the router's `router_ip` as its only neighbour and gateway, and the
/// router's way back a /32 route over `router_if` (the router's own address sits on every such link).
pub fn instance_link(
    router: &str,
    router_if: &str,
    router_ip: &str,
    host: &str,
    host_ip: &str,
) -> Result<()> {
    link::veth(router, router_if, host, "eth0")?;
    link::addr(router, router_if, &format!("{router_ip}/32"))?;
    link::route(router, &format!("{host_ip}/32"), None, Some(router_if))?;
    link::addr(host, "eth0", &format!("{host_ip}/32"))?;
    link::route(host, router_ip, None, Some("eth0"))?;
    link::route(host, "default", Some(router_ip), Some("eth0"))?;
    Ok(())
}

/// The IPv6 half of [`instance_link`] on the same veth: `host_ip6` as a /128 on `eth0` with the
/// router's `router_ip6` as its IPv6 neighbour and default gateway, the router's way back a /128
/// route over `router_if`.
pub fn instance_link6(
    router: &str,
    router_if: &str,
    router_ip6: &str,
    host: &str,
    host_ip6: &str,
) -> Result<()> {
    link::addr(router, router_if, &format!("{router_ip6}/128"))?;
    link::route(router, &format!("{host_ip6}/128"), None, Some(router_if))?;
    link::addr(host, "eth0", &format!("{host_ip6}/128"))?;
    link::route(host, &format!("{router_ip6}/128"), None, Some("eth0"))?;
    link::route(host, "default", Some(router_ip6), Some("eth0"))?;
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
