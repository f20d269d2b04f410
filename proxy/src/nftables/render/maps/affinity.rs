//! ClientIP session affinity in the maps layout: a dynamic map from client . key to the endpoint the
//! client's last new connection to that key was sent to, read before the random choice and written
//! after the DNAT (a filter rule per timeout and protocol in use: `update` takes a constant timeout).
//! Keyed by destination key, not by Service: a client remembered for a cluster IP is not remembered
//! for the Service's external IPs (upstream remembers per Service port). Entries naming a removed
//! endpoint are the daemon's to delete (`nftables/maps_sync/affinity.rs`): only it can read them.
//! nft 1.0.6 cannot load an IPv6 table's record rules (it aborts: `netlink_gen_expr: Assertion dreg <
//! ctx->reg_low`), which svcnet's netlink writer encodes; [`nft_loadable`] leaves them out of text
//! for `nft -f`.

use super::*;
use crate::nftables::render::Rule;

/// `ct original ip daddr . ct original protocol . ct original proto-dst` (or its node-port twin):
/// the key as the client sent it, after the DNAT.
fn original_key(ip: &str, by_port: bool) -> String {
    let port = "ct original protocol . ct original proto-dst";
    match by_port {
        true => port.into(),
        false => format!("ct original {ip} daddr . {port}"),
    }
}

/// The lookups before the random choice, one per protocol with affinity keys (`key`: the live key).
pub(super) fn read_rules(ip: &str, key: &str, by_port: bool, in_use: &InUse) -> Vec<Rule> {
    let group = if by_port {
        Group::PortAffinity
    } else {
        Group::Affinity
    };
    let protos: BTreeSet<&str> = in_use
        .iter()
        .filter(|(g, _, _)| *g == group)
        .map(|(_, p, _)| *p)
        .collect();
    protos
        .into_iter()
        .map(|proto| {
            Rule::commented(
                format!(
                    "meta l4proto {proto} dnat {ip} to {ip} saddr . {key} map @{}",
                    group.affinity_map()
                ),
                "sessionAffinity: the endpoint this client was last sent to",
            )
        })
        .collect()
}

/// The records after the DNAT, one per (timeout, protocol) in use.
pub(super) fn record_rules(ip: &str, in_use: &InUse) -> Vec<Rule> {
    in_use
        .iter()
        .filter(|(g, _, _)| matches!(g, Group::Affinity | Group::PortAffinity))
        .map(|(g, proto, t)| {
            let key = original_key(ip, g.by_port());
            // nft needs the protocol matched before `ct original proto-dst` in a concatenation.
            Rule::new(format!(
                "meta l4proto {proto} ct original protocol {proto} {key} @{} update @{} {{ {ip} saddr . {key} timeout {t}s : {ip} daddr . {proto} dport }}",
                g.set(*t),
                g.affinity_map()
            ))
        })
        .collect()
}

/// The two dynamic maps.
pub(super) fn maps(ip: &str) -> Vec<MapsSet> {
    [
        (AFFINITY, format!("{ip} daddr . meta l4proto . th dport")),
        (NP_AFFINITY, "meta l4proto . th dport".into()),
    ]
    .into_iter()
    .map(|(name, key)| MapsSet {
        name: name.into(),
        is_map: true,
        decl: format!("typeof {ip} saddr . {key} : {ip} daddr . th dport"),
        flags: vec!["dynamic", "timeout"],
    })
    .collect()
}

/// `text` (a table or transaction for `nft -f`) without the IPv6 record rules nft 1.0.6 aborts on;
/// IPv4 text is returned as it is. Returns the text and how many rules were left out.
pub fn nft_loadable(text: &str) -> (String, usize) {
    let mut left_out = 0;
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line.starts_with("add rule ip6 ") && line.contains(" update @") {
            left_out += 1;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    (out, left_out)
}
