//! svcnet-proxy: Kubernetes Services as iptables rules, kube-proxy compatible.
//!
//! Flow: [`model`] (plain data from Services/EndpointSlices, validated) -> [`render`] (pure, the KUBE-*
//! chains and iptables-restore text) -> apply (the daemon). [`trace`] walks a packet through a saved
//! ruleset; [`explain`] tells a service's paths in words. The node agent (`svcnet-proxy run`) is wired in
//! [`daemon`]: [`watch`] -> [`changes`] -> [`runner`] -> [`sync`] ([`apply`], [`iptables`],
//! [`conntrack`]) -> [`health`], [`service_health`], [`metrics`] ([`nfacct`]); [`cleanup`] undoes it.
#![forbid(unsafe_code)]

pub mod addresses;
pub mod apply;
pub mod changes;
pub mod cleanup;
pub mod cli;
pub mod config;
pub mod config_file;
pub mod conntrack;
pub mod daemon;
pub mod explain;
pub mod health;
pub mod input;
pub mod iptables;
pub mod metrics;
pub mod model;
pub mod nfacct;
pub mod nft;
pub mod nft_socket;
pub mod nft_sync;
pub mod nftables;
pub mod offline;
pub mod render;
pub mod runner;
pub mod service_health;
pub mod settings;
pub mod sync;
pub mod sysctls;
pub mod trace;
pub mod watch;
pub mod yaml;
