//! svcnet-proxy: Kubernetes Services as iptables rules, kube-proxy compatible.
//!
//! Flow: [`model`] (plain data from Services/EndpointSlices, validated) -> [`render`] (pure, the KUBE-*
//! chains and iptables-restore text) -> apply (the daemon). [`trace`] walks a packet through a saved
//! ruleset; [`explain`] tells a service's paths in words.
#![forbid(unsafe_code)]

pub mod cli;
pub mod config;
pub mod explain;
pub mod input;
pub mod model;
pub mod render;
pub mod trace;
