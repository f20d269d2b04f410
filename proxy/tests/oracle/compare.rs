//! Comparing two nodes' rules: each `iptables-save` (or `ip6tables-save`) is brought to the form
//! upstream's own tests compare (`upstream_norm::sort_rules`: tables and chains by name, the rules of
//! KUBE-SERVICES and KUBE-NODEPORTS by service, and the other chains upstream fills in map order),
//! with what only the kernel knows dropped (packet and
//! byte counters, built-in chains' policies, which neither proxy sets). Then the documented deltas
//! ([`DELTAS`], docs/proxy-rules.md "Differences from upstream kube-proxy") are applied, and what is
//! left must be identical.

use crate::upstream_norm::{diff, sort_rules_and};

/// Chains upstream fills by iterating its map of service ports (Go map order: random from one sync
/// to the next): their rules are sorted by service port before upstream's own sort, which orders
/// only KUBE-SERVICES and KUBE-NODEPORTS and only by service.
const MAP_ORDERED: &[(&str, &str)] = &[
    ("nat", "KUBE-SERVICES"),
    ("nat", "KUBE-NODEPORTS"),
    ("filter", "KUBE-SERVICES"),
    ("filter", "KUBE-NODEPORTS"),
    ("filter", "KUBE-EXTERNAL-SERVICES"),
    ("filter", "KUBE-PROXY-FIREWALL"),
];

/// A difference between upstream kube-proxy and svcnet-proxy that svcnet keeps on purpose, with how
/// the svcnet dump is mapped onto upstream's (so exactly that difference, and nothing else, is
/// accepted).
pub struct Delta {
    pub name: &'static str,
    pub apply: fn(&str) -> String,
}

/// Every accepted delta (each listed with its reason in docs/proxy-rules.md).
pub const DELTAS: &[Delta] = &[];

/// The dump in upstream's test form: counters zeroed, built-in chains declared as `- [0:0]`, then
/// sorted as upstream's `sortIPTablesRules` (and [`MAP_ORDERED`]).
pub fn normalize(save: &str) -> Result<String, String> {
    let mut out = String::new();
    for line in save.lines() {
        if let Some(decl) = line.strip_prefix(':') {
            let name = decl.split_whitespace().next().unwrap_or_default();
            out.push_str(&format!(":{name} - [0:0]\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    sort_rules_and(&out, MAP_ORDERED)
}

/// None when the two normalized dumps agree (after the deltas), else the unified diff.
pub fn compare(what: &str, upstream: &str, svcnet: &str) -> Option<String> {
    let up = match normalize(upstream) {
        Ok(t) => t,
        Err(e) => return Some(format!("{what}: cannot parse upstream's dump: {e}\n{upstream}")),
    };
    let sv = match normalize(svcnet) {
        Ok(t) => DELTAS.iter().fold(t, |t, d| (d.apply)(&t)),
        Err(e) => return Some(format!("{what}: cannot parse svcnet's dump: {e}\n{svcnet}")),
    };
    (up != sv).then(|| {
        diff::unified(
            &format!("{what} upstream kube-proxy"),
            &up,
            &format!("{what} svcnet-proxy --layout flat"),
            &sv,
        )
    })
}
