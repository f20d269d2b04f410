//! The match primitives of the nftables tracer: what a selector reads from the packet ([`Sel`]) and
//! whether a set element or literal holds the packet's values.

use std::net::IpAddr;

use ipnet::IpNet;

/// What a match reads from the packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Sel {
    Saddr,
    Daddr,
    L4proto,
    /// `th dport` (None) or `tcp dport` (also a protocol match).
    Dport(Option<&'static str>),
    /// `fib saddr type` (true) or `fib daddr type`.
    FibType(bool),
    Iifname,
    CtState,
    /// `ct status`: `dnat` once the connection's destination was translated.
    CtStatus,
    /// `ct original ip daddr`, `ct original protocol`, `ct original proto-dst`: the connection as the
    /// client opened it (before any DNAT).
    OrigDaddr,
    OrigProto,
    OrigDport,
    Mark,
}

/// A selector at the start of `w`, and how many words it took.
pub(super) fn selector(w: &[&str]) -> Option<(Sel, usize)> {
    Some(match w {
        ["ip" | "ip6", "saddr", ..] => (Sel::Saddr, 2),
        ["ip" | "ip6", "daddr", ..] => (Sel::Daddr, 2),
        ["meta", "l4proto", ..] => (Sel::L4proto, 2),
        ["meta", "mark", ..] => (Sel::Mark, 2),
        ["mark", ..] => (Sel::Mark, 1),
        ["th", "dport", ..] => (Sel::Dport(None), 2),
        ["tcp", "dport", ..] => (Sel::Dport(Some("tcp")), 2),
        ["udp", "dport", ..] => (Sel::Dport(Some("udp")), 2),
        ["sctp", "dport", ..] => (Sel::Dport(Some("sctp")), 2),
        ["fib", "saddr", "type", ..] => (Sel::FibType(true), 3),
        ["fib", "daddr", "type", ..] => (Sel::FibType(false), 3),
        ["iifname", ..] | ["meta", "iifname", ..] => (Sel::Iifname, if w[0] == "meta" { 2 } else { 1 }),
        ["ct", "state", ..] => (Sel::CtState, 2),
        ["ct", "status", ..] => (Sel::CtStatus, 2),
        ["ct", "original", "ip" | "ip6", "daddr", ..] => (Sel::OrigDaddr, 4),
        ["ct", "original", "protocol", ..] => (Sel::OrigProto, 3),
        // How `nft list` prints `ct original protocol`.
        ["ct", "protocol", ..] => (Sel::OrigProto, 2),
        ["ct", "original", "proto-dst", ..] => (Sel::OrigDport, 3),
        _ => return None,
    })
}

/// Whether an element key (or a literal) equals the packet's values, part by part.
pub(super) fn key_matches(sels: &[Sel], values: &[String], key: &[String]) -> bool {
    key.len() == sels.len()
        && sels
            .iter()
            .zip(values)
            .zip(key)
            .all(|((sel, v), k)| part_matches(*sel, v, k))
}

fn part_matches(sel: Sel, value: &str, key: &str) -> bool {
    match sel {
        Sel::Saddr | Sel::Daddr | Sel::OrigDaddr => {
            let Ok(ip) = value.parse::<IpAddr>() else {
                return false;
            };
            if let Ok(net) = key.parse::<IpNet>() {
                return net.contains(&ip);
            }
            key.parse::<IpAddr>().is_ok_and(|k| k == ip)
        }
        Sel::L4proto | Sel::OrigProto => {
            let k = match key {
                "6" => "tcp",
                "17" => "udp",
                "132" => "sctp",
                k => k,
            };
            k.eq_ignore_ascii_case(value)
        }
        Sel::Dport(_) | Sel::OrigDport => key
            .parse::<u16>()
            .ok()
            .zip(value.parse::<u16>().ok())
            .is_some_and(|(a, b)| a == b),
        Sel::Mark => parse_u32(key).is_some_and(|k| value.parse::<u32>().is_ok_and(|v| v == k)),
        Sel::Iifname => match key.strip_suffix('*') {
            Some(prefix) => value.starts_with(prefix.trim_matches('"')),
            None => value == key.trim_matches('"'),
        },
        Sel::FibType(_) | Sel::CtState | Sel::CtStatus => value == key,
    }
}

pub(super) fn parse_u32(s: &str) -> Option<u32> {
    match s.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

pub(super) fn is_local(node_ips: &[IpAddr], ip: IpAddr) -> bool {
    ip.is_loopback() || node_ips.contains(&ip)
}
