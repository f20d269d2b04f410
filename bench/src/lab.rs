//! A loaded namespace: the lab namespace plus its agent, dropped agent-first.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::agent::Agent;
use crate::error::BenchError;
use crate::netns::{self, Netns};
use crate::synth::ENDPOINT_PORT;

pub struct Lab {
    // Field order is drop order: stop the agent, then delete the namespace.
    pub agent: Agent,
    pub ns: Netns,
}

/// Where the probe listener accepts the DNATed connections.
pub fn endpoint_addr() -> Result<Ipv4Addr, BenchError> {
    netns::ENDPOINT_ADDR
        .parse()
        .map_err(|e| BenchError::Check(format!("endpoint address: {e}")))
}

impl Lab {
    pub fn start(tag: &str) -> Result<Lab, BenchError> {
        let ns = Netns::create_lab(tag)?;
        let listen = SocketAddr::new(IpAddr::V4(endpoint_addr()?), ENDPOINT_PORT);
        let agent = Agent::spawn(&ns, listen)?;
        Ok(Lab { agent, ns })
    }
}
