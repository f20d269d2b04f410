//! svcnet-proxy: Kubernetes Services as iptables rules, kube-proxy compatible.
//!
//! Flow: [`model`] (plain data from Services/EndpointSlices, validated) -> [`render`] (pure, the KUBE-*
//! chains and iptables-restore text) -> apply (the daemon). [`trace`] walks a packet through a saved
//! ruleset; `explain` tells a service's paths in words ([`offline`] runs both). The node agent
//! (`svcnet-proxy run`) is wired in [`daemon`]: `watch` -> `changes` -> `runner` -> `sync` (`apply`,
//! `iptables`, `conntrack`) -> `health`, `service_health`, `metrics` ([`nfacct`]); [`cleanup`] undoes it.
//!
//! Modules are private unless the binary, the tests under `tests/` or svcnet-bench use them.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod addresses;
mod apply;
mod changes;
pub mod cleanup;
pub mod cli;
pub mod config;
mod config_file;
mod conntrack;
pub mod daemon;
mod exec;
mod explain;
mod health;
pub mod input;
mod iptables;
mod metrics;
pub mod model;
pub mod nfacct;
pub mod nft;
pub mod nft_socket;
pub mod nft_sync;
pub mod nftables;
pub mod offline;
pub mod render;
mod runner;
mod service_health;
pub mod settings;
mod sync;
mod sysctls;
pub mod trace;
mod watch;
pub mod yaml;
