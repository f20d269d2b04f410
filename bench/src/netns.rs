//! Throwaway network namespaces for the kernel-side measurements.
//!
//! Each namespace has a unique name (`svcnet-bench-<pid>-<n>-<tag>`), holds only its own `lo`
//! (nothing links it to the root namespace), and is deleted on drop,
//! which also runs while a panic unwinds. A run killed by a signal cannot drop; the next run
//! deletes namespaces whose owning pid is gone ([`remove_stale`]).

use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::BenchError;

const PREFIX: &str = "svcnet-bench-";
static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// The endpoint address the probe listener binds (on the namespace's `lo`).
pub const ENDPOINT_ADDR: &str = "10.200.0.1";
/// The source address of probe connections: distinct from the endpoint, so no hairpin masquerade.
pub const CLIENT_ADDR: &str = "10.200.0.2";
/// Routed to `lo` so connects to cluster IPs reach nat OUTPUT at all.
pub const SERVICE_CIDR: &str = "10.96.0.0/12";
/// A whole block of local addresses: the endpoints of many-endpoint probe services.
pub const LOCAL_ENDPOINTS_CIDR: &str = "10.201.0.0/16";

#[derive(Debug)]
pub struct Netns {
    pub name: String,
}

fn run(cmd: &mut Command) -> Result<Output, BenchError> {
    let out = cmd.output().map_err(|e| BenchError::io(format!("{cmd:?}"), e))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(BenchError::Netns(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

impl Netns {
    pub fn create(tag: &str) -> Result<Netns, BenchError> {
        let name = format!(
            "{PREFIX}{}-{}-{tag}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        run(Command::new("ip").args(["netns", "add", &name]))?;
        Ok(Netns { name })
    }

    /// `ip -n <ns> <args>`.
    pub fn ip(&self, args: &[&str]) -> Result<(), BenchError> {
        run(Command::new("ip").args(["-n", &self.name]).args(args)).map(|_| ())
    }

    /// A namespace with `lo` up carrying the probe addresses (plus a local /16 for many-endpoint
    /// services), and the service CIDR routed to `lo` so connects to cluster IPs get a route and reach
    /// nat OUTPUT (where they are DNATed to an endpoint). `lo` needs no kernel module, unlike a dummy
    /// interface.
    pub fn create_lab(tag: &str) -> Result<Netns, BenchError> {
        let ns = Netns::create(tag)?;
        ns.ip(&["link", "set", "lo", "up"])?;
        ns.ip(&["addr", "add", &format!("{ENDPOINT_ADDR}/32"), "dev", "lo"])?;
        ns.ip(&["addr", "add", &format!("{CLIENT_ADDR}/32"), "dev", "lo"])?;
        ns.ip(&["route", "add", SERVICE_CIDR, "dev", "lo", "src", CLIENT_ADDR])?;
        ns.ip(&["route", "add", "local", LOCAL_ENDPOINTS_CIDR, "dev", "lo"])?;
        Ok(ns)
    }

    /// A command that runs `program` inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

/// The pid a bench namespace name was created by, if it is one of ours.
pub fn owner_pid(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

/// Deletes bench namespaces left behind by runs that were killed (their pid no longer exists).
/// Returns the names deleted.
pub fn remove_stale() -> Vec<String> {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return vec![];
    };
    let mut gone = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        let Some(pid) = owner_pid(name) else { continue };
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if Command::new("ip")
            .args(["netns", "del", name])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            gone.push(name.to_string());
        }
    }
    gone
}

#[cfg(test)]
mod tests;
