//! Removing the iptables mode's rules (`svcnet-proxy cleanup`, and a node switched to the nftables
//! mode): every jump rule and chain svcnet installs, and nothing else. Foreign chains (DOCKER, a
//! CNI's, the user's) and foreign rules in built-in chains stay untouched.

use std::collections::BTreeSet;

use super::render::jumps;
use super::render::naming::*;
use super::{Iptables, saved_chains};
use crate::config::RenderConfig;
use crate::exec::ToolError;

/// Fixed-name chains svcnet owns (service chains are recognised by prefix).
pub(crate) const OWNED_CHAINS: &[&str] = &[
    KUBE_SERVICES,
    KUBE_EXTERNAL_SERVICES,
    KUBE_NODEPORTS,
    KUBE_POSTROUTING,
    KUBE_MARK_MASQ,
    KUBE_FORWARD,
    KUBE_PROXY_FIREWALL,
    KUBE_PROXY_CANARY,
    KUBE_FIREWALL,
];

pub(crate) fn owned(chain: &str) -> bool {
    OWNED_CHAINS.contains(&chain) || is_service_chain(chain)
}

/// Chains only svcnet writes (the tree layout's): upstream kube-proxy neither jumps to nor deletes them.
pub(crate) fn svcnet_only(chain: &str) -> bool {
    chain.starts_with(DST_PREFIX) || chain.starts_with(EPG_PREFIX)
}

/// The restore payload that flushes and deletes the owned chains present in `saved` (one table's
/// iptables-save output); `None` when there are none. Flushing everything first lets chains that
/// jump to each other be deleted in one transaction.
pub(crate) fn delete_payload(table: &str, saved: &str) -> Option<String> {
    delete_payload_of(table, saved, owned)
}

/// [`delete_payload`] for the chains `which` selects.
pub(crate) fn delete_payload_of(table: &str, saved: &str, which: fn(&str) -> bool) -> Option<String> {
    let chains: BTreeSet<String> = saved_chains(saved).into_iter().filter(|c| which(c)).collect();
    if chains.is_empty() {
        return None;
    }
    let mut s = format!("*{table}\n");
    for c in &chains {
        s.push_str(&format!(":{c} - [0:0]\n"));
    }
    for c in &chains {
        s.push_str(&format!("-X {c}\n"));
    }
    s.push_str("COMMIT\n");
    Some(s)
}

/// What cleanup removed from one family.
#[derive(Debug, Default)]
pub(crate) struct Removed {
    pub jumps: usize,
    pub chains: Vec<String>,
}

/// Removes svcnet's jumps, then its chains, from one family.
pub(crate) async fn cleanup(ipt: &Iptables) -> Result<Removed, ToolError> {
    let mut removed = Removed::default();
    // Every jump svcnet may have installed, whatever the flags were (the KUBE-FIREWALL ones too).
    let cfg = RenderConfig {
        family: ipt.family,
        localhost_nodeports: true,
        ..RenderConfig::default()
    };
    let mut all = jumps(&cfg);
    all.extend(jumps(&RenderConfig {
        localhost_nodeports: false,
        ..cfg
    }));
    // Upstream kube-proxy jumps to KUBE-FIREWALL in both families (svcnet only where localhost
    // NodePorts apply): after a takeover the IPv6 ones are there too, and they hold the chain.
    for chain in ["INPUT", "OUTPUT"] {
        all.push(super::render::Jump {
            table: "filter",
            chain,
            rule: format!("-j {KUBE_FIREWALL}"),
        });
    }
    for j in &all {
        // A rule can be present more than once (e.g. two agents raced); remove every copy.
        for _ in 0..16 {
            if !ipt.rule_op("-C", j.table, j.chain, &j.rule).await? {
                break;
            }
            if !ipt.rule_op("-D", j.table, j.chain, &j.rule).await? {
                break;
            }
            removed.jumps += 1;
        }
    }
    for table in ["nat", "filter", "mangle"] {
        let saved = ipt.save_table(table).await?;
        if let Some(payload) = delete_payload(table, &saved) {
            ipt.restore(&payload).await?;
            removed.chains.extend(
                saved_chains(&saved)
                    .into_iter()
                    .filter(|c| owned(c))
                    .map(|c| format!("{table}/{c}")),
            );
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_owned_chains_are_deleted() {
        let saved = "*nat\n:PREROUTING ACCEPT [0:0]\n:DOCKER - [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-ABC - [0:0]\n:KUBE-DST-XYZ - [0:0]\n:KUBE-MARK-DROP - [0:0]\n-A DOCKER -j RETURN\nCOMMIT\n";
        let p = delete_payload("nat", saved).expect("some");
        assert!(p.contains("-X KUBE-SERVICES\n"));
        assert!(p.contains("-X KUBE-SVC-ABC\n"));
        assert!(p.contains("-X KUBE-DST-XYZ\n"));
        assert!(!p.contains("DOCKER"));
        assert!(!p.contains("KUBE-MARK-DROP"), "kubelet's chain is not ours");
        assert!(!p.contains("PREROUTING"));
        assert!(
            delete_payload(
                "filter",
                "*filter\n:INPUT ACCEPT [0:0]\n:DOCKER - [0:0]\nCOMMIT\n"
            )
            .is_none()
        );
    }

    #[test]
    fn svcnet_only_leaves_every_chain_kube_proxy_writes() {
        let saved = "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-ABC - [0:0]\n:KUBE-SEP-DEF - [0:0]\n:KUBE-DST-XYZ - [0:0]\n:KUBE-EPG-QRS - [0:0]\nCOMMIT\n";
        let p = delete_payload_of("nat", saved, svcnet_only).expect("some");
        assert!(
            p.contains("-X KUBE-DST-XYZ\n") && p.contains("-X KUBE-EPG-QRS\n"),
            "{p}"
        );
        for upstream in ["KUBE-SERVICES", "KUBE-SVC-ABC", "KUBE-SEP-DEF"] {
            assert!(!p.contains(upstream), "{upstream} is kube-proxy's too: {p}");
        }
    }
}
