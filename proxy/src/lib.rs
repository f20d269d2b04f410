//! svcnet-proxy: Kubernetes Services on a node, kube-proxy compatible, in either of upstream's modes.
//!
//! Flow: [`model`] (plain data from Services/EndpointSlices, validated) -> one of two peer modes,
//! [`iptables`] (the KUBE-* chains as iptables-restore payloads) or [`nftables`] (the `kube-proxy`
//! table as netlink transactions), each with its renderer, its sync and its kernel writer. What both
//! modes use and neither owns: `sync` (the sync loop's types, change tracking, runner, conntrack
//! step), `exec` (the tool runner and its error), `conntrack`, `health`, `service_health`,
//! `metrics`. The node agent (`svcnet-proxy run`) is wired in [`daemon`]: `watch` -> `sync` -> the
//! configured mode; [`cleanup`] removes both modes' rules. The offline commands (`render`, `trace`,
//! `explain`: files in, text out, nothing on the node touched) are [`offline`].
//!
//! Modules are private unless the binary, the tests under `tests/` or svcnet-bench use them.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod addresses;
pub mod cleanup;
pub mod cli;
pub mod config;
mod config_file;
mod conntrack;
pub mod daemon;
mod exec;
#[cfg(test)]
mod fixtures;
mod health;
pub mod iptables;
mod metrics;
pub mod model;
pub mod nftables;
pub mod offline;
mod service_health;
pub mod settings;
mod sync;
mod sysctls;
mod watch;
pub mod yaml;
