//! The packet tracer for the nftables mode's `kube-proxy` table: [`parse`] the table (`nft -f` input
//! as `render --proxy-mode nftables` prints it, or `nft list table ip kube-proxy` from a node), then
//! [`trace`] one NEW connection through it. Gives the same [`Trace`] as the iptables tracer, so
//! outcomes of the two modes compare directly.

mod matches;
mod nat;
mod parse;
mod rule;
mod verdict;
mod walk;

#[cfg(test)]
mod tests;

pub use parse::{NftParseError, NftRuleset, parse};

use super::{Packet, Trace, TraceOptions};

/// Whether `text` is an nftables table rather than iptables-save output.
pub fn is_nft(text: &str) -> bool {
    text.lines()
        .map(str::trim_start)
        .any(|l| l.starts_with("add table ") || l.starts_with("table ip") || l.starts_with("add chain "))
}

/// Walks `packet` through `rules` as the kernel would for a NEW connection.
pub fn trace(rules: &NftRuleset, packet: &Packet, opts: &TraceOptions) -> Trace {
    walk::Walker::new(rules, packet, opts).run()
}
