//! Addresses and CIDRs read the way upstream reads them (k8s.io/utils/net `ParseIPSloppy` and
//! `ParseCIDRSloppy`, Go's pre-1.17 rules): an IPv4 part may carry leading zeros and is read as
//! decimal, never octal, because objects written before Kubernetes tightened validation still exist
//! (`172.30.0.041` is 172.30.0.41). An IPv4-mapped IPv6 address counts as IPv4, as Go's `To4()` says.
//! Callers print the parsed value, so the rules always carry the canonical form.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// Parses an address as upstream's `ParseIPSloppy` does; `None` when upstream would fail too.
pub fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if let Some(v4) = parse_v4_sloppy(s) {
        return Some(IpAddr::V4(v4));
    }
    let v6 = parse_v6_sloppy(s)?;
    Some(match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    })
}

/// Parses a CIDR as upstream's `ParseCIDRSloppy` does and returns the network (host bits cleared, as
/// Go's `IPNet`). The prefix length may carry leading zeros too (`203.0.113.000/025`).
pub fn parse_cidr_sloppy(s: &str) -> Option<IpNet> {
    let (addr, len) = s.split_once('/')?;
    let len = decimal(len, 255)?;
    if let Some(v4) = parse_v4_sloppy(addr) {
        return Ipv4Net::new(v4, u8::try_from(len).ok()?)
            .ok()
            .map(|n| IpNet::V4(n.trunc()));
    }
    let v6 = parse_v6_sloppy(addr)?;
    Ipv6Net::new(v6, u8::try_from(len).ok()?)
        .ok()
        .map(|n| IpNet::V6(n.trunc()))
}

/// Four dot-separated decimal parts of at most 255 each; any number of leading zeros.
fn parse_v4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let mut parts = s.split('.');
    let mut octets = [0u8; 4];
    for o in &mut octets {
        *o = u8::try_from(decimal(parts.next()?, 255)?).ok()?;
    }
    parts.next().is_none().then_some(Ipv4Addr::from(octets))
}

/// IPv6, where an embedded IPv4 tail (`::ffff:010.0.0.1`) may carry leading zeros too.
fn parse_v6_sloppy(s: &str) -> Option<Ipv6Addr> {
    if !s.contains(':') {
        return None;
    }
    if let Ok(v6) = s.parse::<Ipv6Addr>() {
        return Some(v6);
    }
    let (head, tail) = s.rsplit_once(':')?;
    let v4 = parse_v4_sloppy(tail)?;
    format!("{head}:{v4}").parse().ok()
}

/// Decimal digits only (no sign, no spaces), at least one, value at most `max`.
fn decimal(s: &str, max: u32) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: u32 = 0;
    for b in s.bytes() {
        n = n.checked_mul(10)?.checked_add(u32::from(b - b'0'))?;
        if n > max {
            return None;
        }
    }
    Some(n)
}

#[cfg(test)]
mod tests;
