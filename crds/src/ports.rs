//! Forwarded ports of a load balancer and their one-line form for the PORTS printer column.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One forwarded port (a Service port as the forwarding rule carries it).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PortStatus {
    /// Port number on the load balancer IP.
    pub port: i32,
    /// TCP, UDP or SCTP, as in the Service.
    pub protocol: String,
}

impl PortStatus {
    pub fn new(port: i32, protocol: impl Into<String>) -> Self {
        Self {
            port,
            protocol: protocol.into(),
        }
    }
}

/// `80/TCP,443/TCP`: ports in the given order, the way `kubectl get svc` shows them minus the
/// node ports. Empty input gives an empty string.
pub fn format_ports(ports: &[PortStatus]) -> String {
    ports
        .iter()
        .map(|p| format!("{}/{}", p.port, p.protocol))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests;
