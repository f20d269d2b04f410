//! The jump rules kube-proxy installs into built-in chains with `iptables -I` (outside its
//! iptables-restore payload). A bare payload lacks them, so nothing would reach KUBE-SERVICES;
//! [`Ruleset::add_kube_proxy_jumps`] adds them back before tracing such a payload.

use super::lex::tokenize;
use super::parse_rule::parse_rule;
use super::rules::{Chain, Policy, Ruleset, Target};

/// (table, built-in chain, target chain, comment, only NEW connections), in upstream's order.
const JUMPS: &[(&str, &str, &str, &str, bool)] = &[
    (
        "filter",
        "INPUT",
        "KUBE-EXTERNAL-SERVICES",
        "kubernetes externally-visible service portals",
        true,
    ),
    (
        "filter",
        "FORWARD",
        "KUBE-EXTERNAL-SERVICES",
        "kubernetes externally-visible service portals",
        true,
    ),
    (
        "filter",
        "INPUT",
        "KUBE-NODEPORTS",
        "kubernetes health check service ports",
        false,
    ),
    (
        "filter",
        "FORWARD",
        "KUBE-SERVICES",
        "kubernetes service portals",
        true,
    ),
    (
        "filter",
        "OUTPUT",
        "KUBE-SERVICES",
        "kubernetes service portals",
        true,
    ),
    (
        "filter",
        "FORWARD",
        "KUBE-FORWARD",
        "kubernetes forwarding rules",
        false,
    ),
    (
        "filter",
        "INPUT",
        "KUBE-PROXY-FIREWALL",
        "kubernetes load balancer firewall",
        true,
    ),
    (
        "filter",
        "OUTPUT",
        "KUBE-PROXY-FIREWALL",
        "kubernetes load balancer firewall",
        true,
    ),
    (
        "filter",
        "FORWARD",
        "KUBE-PROXY-FIREWALL",
        "kubernetes load balancer firewall",
        true,
    ),
    (
        "nat",
        "OUTPUT",
        "KUBE-SERVICES",
        "kubernetes service portals",
        false,
    ),
    (
        "nat",
        "PREROUTING",
        "KUBE-SERVICES",
        "kubernetes service portals",
        false,
    ),
    (
        "nat",
        "POSTROUTING",
        "KUBE-POSTROUTING",
        "kubernetes postrouting rules",
        false,
    ),
];

/// kubelet's localhost-nodeport mitigation, appended (not prepended) to INPUT and OUTPUT.
const APPENDED: &[(&str, &str, &str)] = &[
    ("filter", "INPUT", "KUBE-FIREWALL"),
    ("filter", "OUTPUT", "KUBE-FIREWALL"),
];

impl Ruleset {
    /// Adds kube-proxy's built-in chain jumps that are missing: one per target chain that exists
    /// in the table and is not already jumped to from that built-in chain. Like upstream's
    /// `EnsureRule(Prepend)`, each goes to the front, so the last listed ends up first.
    /// Added rules have line 0. Returns how many were added.
    pub fn add_kube_proxy_jumps(&mut self) -> usize {
        let mut added = 0;
        for &(table, builtin, target, comment, new_only) in JUMPS {
            let ctstate = if new_only {
                "-m conntrack --ctstate NEW "
            } else {
                ""
            };
            let text = format!("-A {builtin} {ctstate}-m comment --comment \"{comment}\" -j {target}");
            if self.add_jump(table, builtin, target, &text, true) {
                added += 1;
            }
        }
        for &(table, builtin, target) in APPENDED {
            let text = format!("-A {builtin} -j {target}");
            if self.add_jump(table, builtin, target, &text, false) {
                added += 1;
            }
        }
        added
    }

    fn add_jump(&mut self, table: &str, builtin: &str, target: &str, text: &str, front: bool) -> bool {
        let Some(t) = self.tables.get_mut(table) else {
            return false;
        };
        if !t.chains.contains_key(target) {
            return false;
        }
        let chain = t.chains.entry(builtin.to_string()).or_insert(Chain {
            policy: Some(Policy::Accept),
            rules: Vec::new(),
        });
        if chain
            .rules
            .iter()
            .any(|r| matches!(&r.target, Target::Jump(name) | Target::Goto(name) if name == target))
        {
            return false;
        }
        // The texts above are fixed and valid; a failure here would be a bug in this table.
        let Ok(tokens) = tokenize(text) else {
            return false;
        };
        let Ok(rule) = parse_rule(0, text, tokens.get(2..).unwrap_or_default()) else {
            return false;
        };
        if front {
            chain.rules.insert(0, rule);
        } else {
            chain.rules.push(rule);
        }
        true
    }
}
