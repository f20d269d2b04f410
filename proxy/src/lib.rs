//! svcnet-proxy: Kubernetes Services as iptables rules.
//!
//! Flow: `model` (plain data from Services/EndpointSlices) -> `render` (pure, iptables-restore text)
//! -> apply (daemon). `trace` walks a packet through a saved ruleset.
#![forbid(unsafe_code)]

pub mod trace;
