//! Replacing upstream kube-proxy by svcnet-proxy on a live node, and back (issue 17's takeover), with
//! client traffic flowing the whole time to the ClusterIP (from the node), the NodePort (from the other
//! node) and the LB IP (from the outside client): new connections every 20 ms and held ones. The swap is
//! what an operator does: the old proxy's pod is deleted (SIGTERM; neither proxy removes its rules when
//! it stops), the new one starts on the rules left behind. Goal 0 failed and 0 broken in each direction.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use super::basics::Hostnames;
use crate::support::{Cluster, From, Proxy};

/// Both directions on the first node; svcnet serves it before and after.
pub fn takeover(c: &dyn Cluster, h: &Hostnames, lb_ip: &str) {
    let nodes = c.nodes();
    let ((node, node_ip), other) = (&nodes[0], &nodes[1].0);
    let save = |v6| c.iptables_save(node, v6);
    let before = settled(&save);
    // A family without Services of its own (IPv6 here) has svcnet's KUBE-MARK-MASQ unreferenced
    // from the start: only chains unreferenced after the takeover and not before are left-overs.
    let unreferenced_before = [unreferenced(&save(false)), unreferenced(&save(true))];
    let flows = [
        (From::Node(node), format!("{}:80", h.cluster_ip)),
        (From::Node(other), format!("{node_ip}:{}", h.node_port)),
        (From::Client, format!("{lb_ip}:80")),
    ];
    direction(c, "svcnet -> kube-proxy", &flows, || {
        c.stop_proxy(node, Proxy::Svcnet);
        c.start_proxy(node, Proxy::KubeProxy);
    });
    // kube-proxy rewrote and deleted every chain kind it knows; the tree layout's dispatch chains it
    // does not know stay, unreferenced, until the operator removes them (safe under kube-proxy).
    let left = svcnet_only(&unreferenced(&save(false)));
    println!("    left by svcnet under kube-proxy: {left:?}");
    let out = c.proxy_cleanup(node, &["--only-svcnet-chains"]);
    println!(
        "    svcnet-proxy cleanup --only-svcnet-chains: {}",
        out.trim().replace('\n', "; ")
    );
    for v6 in [false, true] {
        let upstream = save(v6);
        assert_no_duplicate_jumps(&upstream, "under kube-proxy");
        let left = svcnet_only(&unreferenced(&upstream));
        assert!(
            left.is_empty(),
            "svcnet's chains left under kube-proxy after the cleanup: {left:?}"
        );
    }
    direction(c, "kube-proxy -> svcnet", &flows, || {
        c.stop_proxy(node, Proxy::KubeProxy);
        c.start_proxy(node, Proxy::Svcnet);
    });
    for (v6, before) in [(false, &before.0), (true, &before.1)] {
        let after = save(v6);
        assert_no_duplicate_jumps(&after, "under svcnet again");
        let mut left = unreferenced(&after);
        left.retain(|c| !unreferenced_before[usize::from(v6)].contains(c));
        assert!(
            left.is_empty(),
            "kube-proxy's chains left under svcnet: {left:?}\n{after}"
        );
        // svcnet adopted the node: exactly the rules it had before kube-proxy ever ran, in each
        // family (the lab's nodes are dual-stack).
        let after = rules(&after);
        let gone: Vec<&String> = before.difference(&after).collect();
        let extra: Vec<&String> = after.difference(before).collect();
        assert!(
            gone.is_empty() && extra.is_empty(),
            "IPv6 {v6}: svcnet's rules differ from before the takeover: missing {gone:#?}\nextra {extra:#?}"
        );
    }
}

/// Traffic on every flow while `swap` runs, then a moment on the new proxy; prints the tally line and
/// asserts nothing failed or broke.
fn direction(c: &dyn Cluster, name: &str, flows: &[(From<'_>, String)], swap: impl FnOnce()) {
    let runs: Vec<_> = flows
        .iter()
        .map(|(from, target)| c.load(*from, std::slice::from_ref(target), 2))
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    swap();
    std::thread::sleep(Duration::from_secs(2));
    let tallies: Vec<Value> = runs.into_iter().flat_map(|r| r.finish()).collect();
    let sum = |k: &str| tallies.iter().map(|t| t[k].as_u64().unwrap_or(0)).sum::<u64>();
    let (ok, failed, long, broken) = (sum("new_ok"), sum("new_failed"), sum("long"), sum("long_broken"));
    println!(
        "    takeover {name}: {failed} failed of {} new, {broken} of {long} established broken",
        ok + failed
    );
    for t in &tallies {
        println!("      {t}");
    }
    assert_eq!(tallies.len(), flows.len(), "a load generator reported nothing");
    for t in &tallies {
        assert!(t["new_ok"].as_u64().unwrap_or(0) > 0, "no traffic flowed: {t}");
        assert_eq!(t["long"].as_u64(), Some(2), "held connections missing: {t}");
    }
    assert_eq!((failed, broken), (0, 0), "takeover {name} lost traffic");
}

/// The rules and user chains of an `iptables-save`, `table:` in front: the set an operator compares
/// (counters, built-in chains' policies and table markers left out, so an empty table equals no table).
/// svcnet's rules on the node once they stop changing: what earlier steps changed (an LB IP written
/// back while the client was already answered through another node) may still be syncing here, and
/// the takeover compares the node's rules after it against these.
fn settled(save: &dyn Fn(bool) -> String) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut last = (rules(&save(false)), rules(&save(true)));
    crate::support::wait_for(
        "svcnet's rules on the node to settle",
        Duration::from_secs(60),
        || {
            // Longer than the proxy's min-sync-period (1 s): a pending sync shows within it.
            std::thread::sleep(Duration::from_secs(2));
            let now = (rules(&save(false)), rules(&save(true)));
            if now == last {
                Some(now)
            } else {
                last = now;
                None
            }
        },
    )
}

fn rules(save: &str) -> BTreeSet<String> {
    let mut table = "";
    let mut out = BTreeSet::new();
    for l in save.lines() {
        if let Some(t) = l.strip_prefix('*') {
            table = t;
        } else if let Some(decl) = l.strip_prefix(':') {
            let mut words = decl.split_whitespace();
            if let (Some(chain), Some("-")) = (words.next(), words.next()) {
                out.insert(format!("{table}: :{chain}"));
            }
        } else if l.starts_with("-A ") {
            out.insert(format!("{table}: {l}"));
        }
    }
    out
}

/// KUBE-* chains that exist but that nothing jumps to (canaries excepted: nobody jumps to them by design).
fn unreferenced(save: &str) -> Vec<String> {
    let mut declared = BTreeMap::new();
    let mut table = "";
    for l in save.lines() {
        if let Some(t) = l.strip_prefix('*') {
            table = t;
        } else if let Some(decl) = l.strip_prefix(':') {
            let chain = decl.split_whitespace().next().unwrap_or_default();
            if chain.starts_with("KUBE-") && !chain.ends_with("-CANARY") {
                declared.insert((table.to_owned(), chain.to_owned()), false);
            }
        } else if l.starts_with("-A ") {
            let words: Vec<&str> = l.split_whitespace().collect();
            for w in words.windows(2).filter(|w| w[0] == "-j" || w[0] == "-g") {
                if let Some(seen) = declared.get_mut(&(table.to_owned(), w[1].to_owned())) {
                    *seen = true;
                }
            }
        }
    }
    declared
        .into_iter()
        .filter(|(_, seen)| !seen)
        .map(|((t, c), _)| format!("{t}/{c}"))
        .collect()
}

/// The chains of `chains` (`table/CHAIN`) only svcnet writes (the tree layout's).
fn svcnet_only(chains: &[String]) -> Vec<String> {
    chains
        .iter()
        .filter(|c| c.contains("/KUBE-DST-") || c.contains("/KUBE-EPG-"))
        .cloned()
        .collect()
}

/// A jump from a built-in chain written twice (once by each proxy) would run every rule twice.
fn assert_no_duplicate_jumps(save: &str, when: &str) {
    let mut seen = BTreeSet::new();
    let mut table = "";
    for l in save.lines() {
        if let Some(t) = l.strip_prefix('*') {
            table = t;
        }
        let builtin = l
            .strip_prefix("-A ")
            .and_then(|r| r.split_whitespace().next())
            .is_some_and(|c| c.chars().all(|ch| ch.is_ascii_uppercase()) && !c.starts_with("KUBE"));
        if builtin {
            assert!(
                seen.insert((table, l)),
                "{when}: rule twice in {table}: {l}\n{save}"
            );
        }
    }
}
