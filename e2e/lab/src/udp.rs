//! The `udp` helper subcommand: one datagram to ADDR:PORT from inside a lab namespace, and the reply
//! (the pods' hostname server answers UDP with its name), so UDP Services are tested without extra tools.

use std::net::UdpSocket;
use std::time::Duration;

use anyhow::{Context, Result};

/// Sends `payload` and prints the first reply; an error when none arrives within `timeout_s`.
pub fn main(addr: &str, timeout_s: u64) -> Result<()> {
    let sock = UdpSocket::bind("0.0.0.0:0")?;
    sock.set_read_timeout(Some(Duration::from_secs(timeout_s)))?;
    sock.connect(addr).with_context(|| format!("udp {addr}"))?;
    sock.send(b"hostname?\n")?;
    let mut buf = [0u8; 1500];
    let n = sock
        .recv(&mut buf)
        .with_context(|| format!("no UDP reply from {addr}"))?;
    print!("{}", String::from_utf8_lossy(&buf[..n]));
    Ok(())
}
