//! ClientIP session affinity in the maps layout, per Service port as upstream remembers it: each
//! affinity port has a dynamic map from client to the endpoint the client's last new connection
//! was sent to, looked up before the random choice and written after the DNAT ([`Sticky`]).
//! `services` and `nodeports` reach a port's lookup chain through one verdict map lookup of the
//! packet's key, and the filter hooks its record chain through one of the connection's original
//! key, so a client sent to an endpoint through the cluster IP is sent there again through an
//! external IP or a node port. Entries naming a removed endpoint are the daemon's to delete
//! (`nftables/maps_sync/affinity.rs`): only it can read them. nft 1.0.6 cannot load an IPv6 table's
//! record rules (it aborts: `netlink_gen_expr: Assertion dreg < ctx->reg_low`), which svcnet's
//! netlink writer encodes; [`nft_loadable`] leaves them out of text for `nft -f`.

use super::*;
use crate::nftables::render::Rule;

/// The protocols with affinity ports, and the ports.
fn in_use(in_use: &InUse) -> (BTreeSet<&'static str>, BTreeSet<(Sticky, &'static str)>) {
    let protos = in_use
        .iter()
        .filter(|(g, _, _)| *g == Group::Affinity)
        .map(|(_, p, _)| *p)
        .collect();
    let ports = in_use
        .iter()
        .filter_map(|(g, p, _)| match g {
            Group::Sticky(s) => Some((*s, *p)),
            _ => None,
        })
        .collect();
    (protos, ports)
}

/// The lookup before the random choice (`key`: the live key): one verdict map lookup, present
/// once any port has had affinity.
pub(super) fn read_rule(key: &str, by_port: bool, used: &InUse) -> Option<Rule> {
    let map = if by_port { NP_STICKY_KEYS } else { STICKY_KEYS };
    (!in_use(used).0.is_empty()).then(|| {
        Rule::commented(
            format!("{key} vmap @{map}"),
            "sessionAffinity: the endpoint this client was last sent to",
        )
    })
}

/// The records after the DNAT, one per protocol and kind of key in use: the connection's original
/// key picks its port's record chain.
pub(super) fn record_rules(ip: &str, used: &InUse) -> Vec<Rule> {
    let port = "ct original protocol . ct original proto-dst";
    let mut out = Vec::new();
    for proto in in_use(used).0 {
        for (key, map) in [
            (format!("ct original {ip} daddr . {port}"), STICKY_RECORDS),
            (port.to_string(), NP_STICKY_RECORDS),
        ] {
            // nft needs the protocol matched before `ct original proto-dst` in a concatenation.
            out.push(Rule::new(format!(
                "meta l4proto {proto} ct original protocol {proto} {key} vmap @{map}"
            )));
        }
    }
    out
}

/// Each affinity port's lookup and record chains with their one rule.
pub(super) fn port_chains(ip: &str, used: &InUse) -> Vec<Chain> {
    let mut out = Vec::new();
    for (s, proto) in in_use(used).1 {
        let mut lookup = Chain::new(s.lookup_chain());
        lookup.rules.push(Rule::new(format!(
            "meta l4proto {proto} dnat {ip} to {ip} saddr map @{}",
            s.map()
        )));
        let mut record = Chain::new(s.record_chain());
        record.rules.push(Rule::new(format!(
            "meta l4proto {proto} update @{} {{ {ip} saddr timeout {}s : {ip} daddr . {proto} dport }}",
            s.map(),
            s.timeout
        )));
        out.extend([lookup, record]);
    }
    out
}

/// The verdict maps (once any port has had affinity) and each port's dynamic map.
pub(super) fn maps(ip: &str, addr: &str, used: &InUse) -> Vec<MapsSet> {
    let (protos, ports) = in_use(used);
    let mut out = Vec::new();
    if !protos.is_empty() {
        for (name, key) in [
            (STICKY_KEYS, format!("{addr} . inet_proto . inet_service")),
            (NP_STICKY_KEYS, "inet_proto . inet_service".into()),
            (STICKY_RECORDS, format!("{addr} . inet_proto . inet_service")),
            (NP_STICKY_RECORDS, "inet_proto . inet_service".into()),
        ] {
            out.push(MapsSet {
                name: name.into(),
                is_map: true,
                decl: format!("type {key} : verdict"),
                flags: vec![],
            });
        }
    }
    let dynamic: BTreeSet<Sticky> = ports.into_iter().map(|(s, _)| s).collect();
    out.extend(dynamic.into_iter().map(|s| MapsSet {
        name: s.map(),
        is_map: true,
        decl: format!("typeof {ip} saddr : {ip} daddr . th dport"),
        flags: vec!["dynamic", "timeout"],
    }));
    out
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
