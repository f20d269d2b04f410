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

/// The endpoint of single-endpoint probe services.
pub fn endpoint_addr() -> Result<Ipv4Addr, BenchError> {
    netns::ENDPOINT_ADDR
        .parse()
        .map_err(|e| BenchError::Check(format!("endpoint address: {e}")))
}

/// `n` endpoint addresses the listener answers on: one on `lo`, or `n` from the local /16.
pub fn local_endpoints(n: usize) -> Result<Vec<Ipv4Addr>, BenchError> {
    if n <= 1 {
        return Ok(vec![endpoint_addr()?]);
    }
    if n > 250 * 250 {
        return Err(BenchError::Check(format!(
            "{n} local endpoints do not fit in a /16"
        )));
    }
    Ok((0..n)
        .map(|k| Ipv4Addr::new(10, 201, (k / 250) as u8, (k % 250 + 1) as u8))
        .collect())
}

impl Lab {
    pub fn start(tag: &str) -> Result<Lab, BenchError> {
        let ns = Netns::create_lab(tag)?;
        // Every local address of the namespace: the lo address and the local /16.
        let listen = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), ENDPOINT_PORT);
        let agent = Agent::spawn(&ns, listen)?;
        Ok(Lab { agent, ns })
    }
}
