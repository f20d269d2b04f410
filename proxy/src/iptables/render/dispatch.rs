//! KUBE-SERVICES layout. `flat` is upstream's single list. `tree` splits the destination space into
//! prefix chains (KUBE-DST-*) so a new connection walks O(log n) rules instead of O(n). Every rule for
//! one destination stays in one chain in upstream order; destinations never overlap (each rule matches
//! one address with `-d`), so moving different destinations into different chains cannot change which
//! rule a packet hits.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::Chain;
use super::naming::{KUBE_SERVICES, dst_chain};
use crate::config::{Layout, RenderConfig};

/// Bits consumed per tree level (fanout 4): the best trade-off between depth and rules per level
/// for 10k-30k services (docs/proxy-rules.md, "The dispatch tree").
const FANOUT_BITS: u32 = 2;

/// Returns KUBE-SERVICES (without the trailing NodePorts jump) and the dispatch chains it uses.
pub(super) fn build(rules: Vec<(IpAddr, String)>, cfg: &RenderConfig) -> (Chain, Vec<Chain>) {
    let mut root = Chain {
        name: KUBE_SERVICES.to_string(),
        rules: Vec::new(),
    };
    match cfg.layout {
        Layout::Flat => {
            root.rules = rules.into_iter().map(|(_, r)| r).collect();
            (root, Vec::new())
        }
        Layout::Tree => {
            let groups = group_by_destination(rules);
            let mut chains = Vec::new();
            root.rules = node(&groups, cfg.tree_leaf_max.max(1), &mut chains);
            chains.sort_by(|a, b| a.name.cmp(&b.name));
            (root, chains)
        }
    }
}

/// One destination with all its rules, in the order they were produced.
struct Dest {
    bits: u128,
    width: u32,
    rules: Vec<String>,
}

fn to_bits(ip: &IpAddr) -> (u128, u32) {
    match ip {
        IpAddr::V4(v4) => (u128::from(u32::from(*v4)), 32),
        IpAddr::V6(v6) => (u128::from(*v6), 128),
    }
}

fn group_by_destination(rules: Vec<(IpAddr, String)>) -> Vec<Dest> {
    let mut map: std::collections::BTreeMap<(u32, u128), Vec<String>> = Default::default();
    for (ip, rule) in rules {
        let (bits, width) = to_bits(&ip);
        map.entry((width, bits)).or_default().push(rule);
    }
    map.into_iter()
        .map(|((width, bits), rules)| Dest { bits, width, rules })
        .collect()
}

/// Bit `i` (0 = most significant) .. `i+n` of a `width`-bit address.
fn bits_at(bits: u128, width: u32, i: u32, n: u32) -> u128 {
    (bits >> (width - i - n)) & ((1u128 << n) - 1)
}

fn common_prefix_len(a: u128, b: u128, width: u32) -> u32 {
    let x = (a ^ b) << (128 - width);
    if x == 0 { width } else { x.leading_zeros() }
}

fn prefix_string(bits: u128, width: u32, len: u32) -> String {
    let mask = if len == 0 {
        0
    } else {
        (!0u128 << (width - len)) & (if width == 128 { !0 } else { (1u128 << width) - 1 })
    };
    let net = bits & mask;
    if width == 32 {
        format!("{}/{len}", Ipv4Addr::from(net as u32))
    } else {
        format!("{}/{len}", Ipv6Addr::from(net))
    }
}

/// Rules of one tree node over `dests` (sorted, same family, distinct). Inlines everything when small.
fn node(dests: &[Dest], leaf_max: usize, chains: &mut Vec<Chain>) -> Vec<String> {
    let total: usize = dests.iter().map(|d| d.rules.len()).sum();
    if total <= leaf_max || dests.len() <= 1 {
        return dests.iter().flat_map(|d| d.rules.iter().cloned()).collect();
    }
    // Mixed families cannot occur (one payload per family), but keep them apart defensively.
    if dests.first().map(|d| d.width) != dests.last().map(|d| d.width) {
        let split = dests.partition_point(|d| d.width == 32);
        let mut out = node(&dests[..split], leaf_max, chains);
        out.extend(node(&dests[split..], leaf_max, chains));
        return out;
    }
    let (first, last) = (&dests[0], &dests[dests.len() - 1]);
    let width = first.width;
    let lcp = common_prefix_len(first.bits, last.bits, width);
    let n = FANOUT_BITS.min(width - lcp);
    let mut out = Vec::new();
    let mut start = 0;
    while start < dests.len() {
        let key = bits_at(dests[start].bits, width, lcp, n);
        let end = start + dests[start..].partition_point(|d| bits_at(d.bits, width, lcp, n) == key);
        let group = &dests[start..end];
        if group.len() == 1 {
            out.extend(group[0].rules.iter().cloned());
        } else {
            let prefix = prefix_string(group[0].bits, width, lcp + n);
            let name = dst_chain(&prefix);
            let rules = node(group, leaf_max, chains);
            out.push(format!("-d {prefix} -j {name}"));
            chains.push(Chain { name, rules });
        }
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(n: u32) -> Vec<(IpAddr, String)> {
        (0..n)
            .map(|i| {
                let ip = IpAddr::V4(Ipv4Addr::from(0x0a60_0000 + i * 7));
                (ip, format!("-d {ip} --dport 80 -j X{i}"))
            })
            .collect()
    }

    #[test]
    fn small_sets_are_flat() {
        let cfg = RenderConfig::default();
        let (root, chains) = build(rules(5), &cfg);
        assert_eq!(root.rules.len(), 5);
        assert!(chains.is_empty());
    }

    #[test]
    fn tree_keeps_every_rule_once_and_is_shallow() {
        let cfg = RenderConfig::default();
        let input = rules(5000);
        let (root, chains) = build(input.clone(), &cfg);
        let mut leaves: Vec<String> = root
            .rules
            .iter()
            .chain(chains.iter().flat_map(|c| c.rules.iter()))
            .filter(|r| !r.contains("KUBE-DST-"))
            .cloned()
            .collect();
        leaves.sort();
        let mut want: Vec<String> = input.into_iter().map(|(_, r)| r).collect();
        want.sort();
        assert_eq!(leaves, want);
        assert!(root.rules.len() <= 4, "root has {} rules", root.rules.len());
        assert!(
            chains.iter().all(|c| c.rules.len() <= 8),
            "a chain exceeds the leaf size"
        );
    }

    #[test]
    fn prefixes() {
        assert_eq!(prefix_string(0x0a4f_ff04, 32, 24), "10.79.255.0/24");
        assert_eq!(prefix_string(1, 128, 120), "::/120");
        assert_eq!(common_prefix_len(0x0a00_0000, 0x0a00_0001, 32), 31);
    }
}
