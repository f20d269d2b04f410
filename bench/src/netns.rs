//! Throwaway network namespaces for the kernel-side measurements.
//!
//! The guard is the workspace's one (`svcnet-netns`): a unique name, only its own `lo` (nothing links it
//! to the root namespace), deleted on drop, also while a panic unwinds. A run killed by a signal
//! cannot drop; the next run deletes namespaces whose owning pid is gone ([`remove_stale`]).

use std::process::Command;

use svcnet_netns::link;

use crate::error::BenchError;

/// The endpoint address the probe listener binds (on the namespace's `lo`).
pub const ENDPOINT_ADDR: &str = "10.200.0.1";
/// The source address of probe connections: distinct from the endpoint, so no hairpin masquerade.
pub const CLIENT_ADDR: &str = "10.200.0.2";
/// Routed to `lo` so connects to cluster IPs reach nat OUTPUT at all.
pub const SERVICE_CIDR: &str = "10.96.0.0/12";
/// A whole block of local addresses: the endpoints of many-endpoint probe services.
pub const LOCAL_ENDPOINTS_CIDR: &str = "10.201.0.0/16";

/// A bench namespace: the shared guard (`svcnet-netns`: unique `svcnet-t-<tag>-<pid>-<n>` name, deleted
/// with whatever still runs inside on drop, also while a panic unwinds) plus the probe addressing.
#[derive(Debug)]
pub struct Netns {
    pub name: String,
    guard: svcnet_netns::Netns,
}

impl Netns {
    pub fn create(tag: &str) -> Result<Netns, BenchError> {
        let guard = svcnet_netns::Netns::new(&format!("bench-{tag}"))?;
        Ok(Netns {
            name: guard.name().to_string(),
            guard,
        })
    }

    /// A namespace with `lo` up (as every guard has it) carrying the probe addresses (plus a local /16
    /// for many-endpoint services), and the service CIDR routed to `lo` so connects to cluster IPs get
    /// a route and reach nat OUTPUT (where they are DNATed to an endpoint). `lo` needs no kernel
    /// module, unlike a dummy interface.
    pub fn create_lab(tag: &str) -> Result<Netns, BenchError> {
        let ns = Netns::create(tag)?;
        link::addr(&ns.name, "lo", &format!("{ENDPOINT_ADDR}/32"))?;
        link::addr(&ns.name, "lo", &format!("{CLIENT_ADDR}/32"))?;
        // Connects to cluster IPs leave from CLIENT_ADDR, never the endpoint's own (no hairpin).
        link::ip(
            &ns.name,
            &["route", "add", SERVICE_CIDR, "dev", "lo", "src", CLIENT_ADDR],
        )?;
        link::local_route(&ns.name, LOCAL_ENDPOINTS_CIDR, "lo")?;
        Ok(ns)
    }

    /// A command that runs `program` inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        self.guard.command(&[program])
    }
}

/// Deletes namespaces left behind by killed runs (their owner pid is gone), the bench's and the
/// tests'. Returns the names deleted.
pub fn remove_stale() -> Vec<String> {
    svcnet_netns::sweep_dead()
}

#[cfg(test)]
mod tests;
