//! The endpoint tree: exact rule text for small shapes, 1/n for every endpoint from the printed
//! probabilities, names, and the whole renderer + tracer on a 200-endpoint service.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::config::Layout;
use crate::iptables::render::naming::{EPG_PREFIX, sep_chain, svc_chain, svl_chain};
use crate::iptables::render::{Rendered, Table, render};
use crate::model::ProxyState;
use crate::offline::input::parse_objects;
use crate::offline::trace::{self, Hook, Packet, Proto, TraceOptions, Verdict};

const OWNER: &str = "KUBE-SVC-YN5D6RYVEVZOH44Q";

fn endpoints(n: usize) -> Vec<EndpointJump> {
    (0..n)
        .map(|i| EndpointJump {
            comment: format!("-m comment --comment \"default/x -> ep{i}\" "),
            sep: format!("KUBE-SEP-EP{i}"),
        })
        .collect()
}

fn small(threshold: usize, fanout: usize) -> Option<TreeShape> {
    Some(TreeShape { threshold, fanout })
}

fn g(path: &str) -> String {
    epg_chain(OWNER, path)
}

fn ep(i: usize) -> String {
    format!("-m comment --comment \"default/x -> ep{i}\" ")
}

#[test]
fn at_or_below_threshold_is_upstreams_list() {
    let (rules, chains) = selection_rules(OWNER, &endpoints(4), small(4, 2));
    assert!(chains.is_empty());
    assert_eq!(
        rules,
        vec![
            format!(
                "{}-m statistic --mode random --probability 0.2500000000 -j KUBE-SEP-EP0",
                ep(0)
            ),
            format!(
                "{}-m statistic --mode random --probability 0.3333333333 -j KUBE-SEP-EP1",
                ep(1)
            ),
            format!(
                "{}-m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-EP2",
                ep(2)
            ),
            format!("{}-j KUBE-SEP-EP3", ep(3)),
        ]
    );
    // The flat layout never builds a tree, whatever the size.
    let (rules, chains) = selection_rules(OWNER, &endpoints(300), None);
    assert!(chains.is_empty());
    assert_eq!(rules.len(), 300);
    assert_eq!(
        rules[100],
        format!(
            "{}-m statistic --mode random --probability 0.0050000000 -j KUBE-SEP-EP100",
            ep(100)
        )
    );
    assert_eq!(rules[299], format!("{}-j KUBE-SEP-EP299", ep(299)));
}

#[test]
fn five_endpoints_fanout_three() {
    // 5 > fanout 3: two levels, 3 branches (3^2 >= 5) of 2, 2 and 1 endpoints; the single
    // endpoint is jumped to directly.
    let (rules, chains) = selection_rules(OWNER, &endpoints(5), small(4, 3));
    assert_eq!(
        rules,
        vec![
            format!(
                "-m statistic --mode random --probability 0.4000000000 -j {}",
                g("0")
            ),
            format!(
                "-m statistic --mode random --probability 0.6666666667 -j {}",
                g("1")
            ),
            format!("{}-j KUBE-SEP-EP4", ep(4)),
        ]
    );
    let want = vec![
        Chain {
            name: g("0"),
            rules: vec![
                format!(
                    "{}-m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-EP0",
                    ep(0)
                ),
                format!("{}-j KUBE-SEP-EP1", ep(1)),
            ],
        },
        Chain {
            name: g("1"),
            rules: vec![
                format!(
                    "{}-m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-EP2",
                    ep(2)
                ),
                format!("{}-j KUBE-SEP-EP3", ep(3)),
            ],
        },
    ];
    assert_eq!(chains, want);
}

#[test]
fn five_endpoints_fanout_two_nests() {
    // Binary: 5 -> 3 + 2, 3 -> 2 + 1. Chains are listed parent before child, depth first.
    let (rules, chains) = selection_rules(OWNER, &endpoints(5), small(4, 2));
    assert_eq!(
        rules,
        vec![
            format!(
                "-m statistic --mode random --probability 0.6000000000 -j {}",
                g("0")
            ),
            format!("-j {}", g("1")),
        ]
    );
    let names: Vec<String> = chains.iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, vec![g("0"), g("0.0"), g("1")]);
    assert_eq!(
        chains[0].rules,
        vec![
            format!(
                "-m statistic --mode random --probability 0.6666666667 -j {}",
                g("0.0")
            ),
            format!("{}-j KUBE-SEP-EP2", ep(2)),
        ]
    );
    assert_eq!(
        chains[1].rules,
        vec![
            format!(
                "{}-m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-EP0",
                ep(0)
            ),
            format!("{}-j KUBE-SEP-EP1", ep(1)),
        ]
    );
    assert_eq!(
        chains[2].rules,
        vec![
            format!(
                "{}-m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-EP3",
                ep(3)
            ),
            format!("{}-j KUBE-SEP-EP4", ep(4)),
        ]
    );
}

#[test]
fn default_shape_splits_evenly() {
    assert_eq!(branches(65, 16), 9);
    assert_eq!(branches(256, 16), 16);
    assert_eq!(branches(257, 16), 7);
    assert_eq!(branches(1000, 16), 10);
    assert_eq!(branches(2000, 16), 13);
    assert_eq!(branches(5, 2), 2);
    let (rules, chains) = selection_rules(OWNER, &endpoints(64), Some(DEFAULT_SHAPE));
    assert!(chains.is_empty(), "64 endpoints stay upstream's list");
    assert_eq!(rules.len(), 64);
    let (rules, chains) = selection_rules(OWNER, &endpoints(1000), Some(DEFAULT_SHAPE));
    assert_eq!(rules.len(), 10);
    assert_eq!(chains.len(), 110);
    assert_eq!(
        rules[0],
        format!(
            "-m statistic --mode random --probability 0.1000000000 -j {}",
            g("0")
        )
    );
}

/// What the tree does to a new connection, computed from the rule text alone.
struct Walk {
    /// Probability of reaching each endpoint chain (from the printed probabilities).
    reach: BTreeMap<String, f64>,
    /// Times each endpoint chain is a jump target (must be once).
    targets: BTreeMap<String, usize>,
    /// Expected number of rules evaluated before the endpoint chain is entered.
    expected_rules: f64,
    depth: usize,
}

fn walk(top: &[String], chains: &[Chain]) -> Walk {
    let by_name: BTreeMap<&str, &Vec<String>> = chains.iter().map(|c| (c.name.as_str(), &c.rules)).collect();
    let mut w = Walk {
        reach: BTreeMap::new(),
        targets: BTreeMap::new(),
        expected_rules: 0.0,
        depth: 0,
    };
    fn go(rules: &[String], mass: f64, depth: usize, by_name: &BTreeMap<&str, &Vec<String>>, w: &mut Walk) {
        w.depth = w.depth.max(depth);
        let mut left = mass;
        for (i, r) in rules.iter().enumerate() {
            let words: Vec<&str> = r.split_whitespace().collect();
            let target = words.last().copied().unwrap_or_default();
            assert_eq!(words[words.len() - 2], "-j", "{r}");
            let p = match words.iter().position(|x| *x == "--probability") {
                Some(at) => {
                    // Printed like upstream (%0.10f): "0.5000000000".
                    assert_eq!(words[at + 1].len(), 12, "{r}");
                    words[at + 1].parse::<f64>().expect("probability")
                }
                None => {
                    assert_eq!(i + 1, rules.len(), "only the last rule is unconditional: {r}");
                    1.0
                }
            };
            w.expected_rules += left;
            let taken = left * p;
            left -= taken;
            if let Some(sub) = by_name.get(target) {
                assert!(target.starts_with(EPG_PREFIX), "{target}");
                go(sub, taken, depth + 1, by_name, w);
            } else {
                assert!(target.starts_with("KUBE-SEP-"), "{target}");
                *w.reach.entry(target.to_string()).or_default() += taken;
                *w.targets.entry(target.to_string()).or_default() += 1;
            }
        }
        assert!(left.abs() < 1e-12, "a chain can fall through ({left})");
    }
    go(top, 1.0, 0, &by_name, &mut w);
    w
}

fn check_uniform(n: usize, shape: TreeShape) -> Walk {
    let eps = endpoints(n);
    let (top, chains) = selection_rules(OWNER, &eps, Some(shape));
    let w = walk(&top, &chains);
    assert_eq!(w.reach.len(), n, "n={n}: every endpoint reachable");
    for e in &eps {
        assert_eq!(w.targets.get(&e.sep), Some(&1), "n={n}: {} jumped to once", e.sep);
        let p = w.reach[&e.sep];
        assert!(
            (p - 1.0 / n as f64).abs() <= 1e-9,
            "n={n} {shape:?}: {} gets {p}, want {}",
            e.sep,
            1.0 / n as f64
        );
    }
    let fanout = shape.fanout.max(2);
    for c in &chains {
        assert!(c.rules.len() <= fanout, "{} has {} rules", c.name, c.rules.len());
    }
    if n > shape.threshold {
        assert!(top.len() <= fanout, "n={n}: top has {} rules", top.len());
    }
    // Every sub-chain is used exactly once, and names do not repeat.
    let mut names: Vec<&str> = chains.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), chains.len(), "n={n}: duplicate chain names");
    w
}

#[test]
fn every_endpoint_gets_one_nth_default_shape() {
    for n in 1..=2000 {
        let w = check_uniform(n, DEFAULT_SHAPE);
        if n > DEFAULT_SHAPE.threshold {
            // ceil(log16 n) levels below the top chain at most.
            assert!(w.depth <= 2, "n={n}: depth {}", w.depth);
            assert!(w.expected_rules < 23.0, "n={n}: walks {} rules", w.expected_rules);
        } else {
            // Upstream's list: rule i (1-based) is reached with probability (n-i+1)/n.
            assert!((w.expected_rules - (n as f64 + 1.0) / 2.0).abs() < 1e-6, "n={n}");
        }
    }
}

#[test]
fn every_endpoint_gets_one_nth_small_shapes() {
    for (threshold, fanout) in [(4, 2), (4, 3), (0, 5), (10, 4)] {
        for n in 1..=300 {
            check_uniform(n, TreeShape { threshold, fanout });
        }
    }
}

#[test]
fn walk_at_1000_endpoints() {
    let flat = {
        let (top, chains) = selection_rules(OWNER, &endpoints(1000), None);
        walk(&top, &chains).expected_rules
    };
    let tree = check_uniform(1000, DEFAULT_SHAPE);
    eprintln!(
        "1000 endpoints: flat walks {flat:.2} rules, tree {:.2} rules over {} levels",
        tree.expected_rules,
        tree.depth + 1
    );
    // Upstream: rule i (1-based) is reached with probability (n-i+1)/n: (n+1)/2 on average.
    assert!((flat - 500.5).abs() < 0.01, "{flat}");
    // 3 levels of 10: 5.5 each.
    assert!(
        (tree.expected_rules - 16.5).abs() < 0.01,
        "{}",
        tree.expected_rules
    );
}

#[test]
fn group_names_are_valid_and_apart() {
    let svc = svc_chain("default/big:http", "tcp");
    let svl = svl_chain("default/big:http", "tcp");
    let a = epg_chain(&svc, "0.1");
    assert!(a.starts_with(EPG_PREFIX));
    assert!(a.len() <= 28, "{a}");
    assert!(
        a.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-'),
        "{a}"
    );
    assert_ne!(a, epg_chain(&svl, "0.1"), "SVC and SVL groups differ");
    assert_ne!(a, epg_chain(&svc, "0.10"));
    assert_ne!(epg_chain(&svc, "1.1"), epg_chain(&svc, "11"));
    for other in [
        "KUBE-SVC-",
        "KUBE-SVL-",
        "KUBE-EXT-",
        "KUBE-FW-",
        "KUBE-SEP-",
        "KUBE-DST-",
        "KUBE-XLB-",
    ] {
        assert!(!a.starts_with(other) && !other.starts_with(EPG_PREFIX), "{other}");
    }
    assert!(
        crate::iptables::render::naming::is_service_chain(&a),
        "stale groups get deleted"
    );
}

// ---- through the whole renderer and the tracer ----

use crate::fixtures::{cfg, node};

/// `default/big` on 10.79.0.10:80 with `n` ready endpoints 10.76.x.y:8080 (optionally ClientIP affinity).
fn big_yaml(n: usize, affinity: bool) -> String {
    let ips: Vec<String> = (0..n)
        .map(|i| format!("10.76.{}.{}", i / 200, i % 200 + 1))
        .collect();
    yaml_with(&ips, affinity)
}

fn yaml_with(ips: &[String], affinity: bool) -> String {
    let aff = if affinity {
        ", sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 600}}"
    } else {
        ""
    };
    let mut y = format!(
        "---\nkind: Service\nmetadata: {{name: big, namespace: default}}\nspec: {{clusterIP: 10.79.0.10, ports: [{{name: http, port: 80, targetPort: 8080, protocol: TCP}}]{aff}}}\n---\nkind: EndpointSlice\nmetadata: {{name: big-x, namespace: default, labels: {{kubernetes.io/service-name: big}}}}\naddressType: IPv4\nports: [{{name: http, port: 8080, protocol: TCP}}]\nendpoints:\n"
    );
    for (i, ip) in ips.iter().enumerate() {
        y.push_str(&format!(
            "- {{addresses: [{ip}], conditions: {{ready: true}}, nodeName: node-{}}}\n",
            i % 3
        ));
    }
    y
}

fn render_yaml(yaml: &str, layout: Layout) -> Rendered {
    let objs = parse_objects(yaml).expect("yaml");
    let cfg = cfg(layout);
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, cfg.family);
    assert!(state.errors.is_empty(), "{:?}", state.errors);
    render(&state, &node(), &cfg)
}

fn render_big(n: usize, affinity: bool, layout: Layout) -> Rendered {
    render_yaml(&big_yaml(n, affinity), layout)
}

fn trace_big(r: &Rendered, layout: Layout) -> trace::Trace {
    let (payload, _) = r.payload(
        &crate::iptables::render::FullOptions {
            jumps: true,
            ..Default::default()
        },
        &cfg(layout),
    );
    let rules = trace::parse(&payload).expect("payload parses");
    let packet = Packet {
        src: "10.76.9.9".parse().expect("ip"),
        dst: "10.79.0.10".parse().expect("ip"),
        dport: 80,
        proto: Proto::Tcp,
        in_iface: Some("cbr0".into()),
    };
    let opts = TraceOptions {
        node_ips: node().ips,
        hook: Hook::Prerouting,
    };
    trace::trace(&rules, &packet, &opts)
}

#[test]
fn tracer_follows_the_tree_to_every_endpoint_with_one_in_200() {
    let r = render_big(200, false, Layout::Tree);
    let svc = svc_chain("default/big:http", "tcp");
    let owned = r.owners().into_values().next().expect("one service port");
    let groups: Vec<&String> = owned.iter().filter(|c| c.starts_with(EPG_PREFIX)).collect();
    // 200 endpoints: 15 groups of 13-14 under the top chain.
    assert_eq!(groups.len(), 15, "{owned:?}");
    assert!(groups.iter().all(|g| r.chain(Table::Nat, g).is_some()));
    let top = &r.chain(Table::Nat, &svc).expect("svc chain").rules;
    assert_eq!(top.len(), 1 + 15, "masquerade rule + 15 branches");

    let t = trace_big(&r, Layout::Tree);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(t.outcomes.len(), 200);
    let mut seen = std::collections::BTreeSet::new();
    for o in &t.outcomes {
        let Verdict::Dnat(to) = o.verdict else {
            panic!("{o}")
        };
        assert!(seen.insert(to), "{to} twice");
        assert!(
            (o.probability - 1.0 / 200.0).abs() <= 1e-9,
            "{to}: {}",
            o.probability
        );
        assert!(o.steps.iter().any(|s| s.chain.starts_with(EPG_PREFIX)), "{o}");
    }
    // Same verdicts and probabilities as upstream's flat list.
    let flat = trace_big(&render_big(200, false, Layout::Flat), Layout::Flat);
    assert!(t.same_outcomes(&flat, 1e-9));
}

#[test]
fn affinity_checks_stay_in_the_top_chain_before_the_tree() {
    let r = render_big(100, true, Layout::Tree);
    let name = "default/big:http";
    let svc = svc_chain(name, "tcp");
    let top = &r.chain(Table::Nat, &svc).expect("svc chain").rules;
    // masquerade, 100 rchecks, then the branches (100 > 64: 10 groups of 10).
    assert_eq!(top.len(), 1 + 100 + 10, "{top:#?}");
    // Endpoints are ordered by their text, as upstream sorts them: 10.76.0.100 comes first.
    let first_sep = sep_chain(name, "tcp", "10.76.0.100:8080");
    assert_eq!(
        top[1],
        format!(
            "-m comment --comment \"{name} -> 10.76.0.100:8080\" -m recent --name {first_sep} --rcheck --seconds 600 --reap -j {first_sep}"
        )
    );
    assert!(top[1..101].iter().all(|r| r.contains("--rcheck")));
    assert!(
        top[101..]
            .iter()
            .all(|r| r.contains(EPG_PREFIX) && !r.contains("--rcheck"))
    );
    assert_eq!(top[110], format!("-j {}", epg_chain(&svc, "9")));
    // Endpoint chains still set the recent list.
    let sep = &r.chain(Table::Nat, &first_sep).expect("sep").rules;
    assert!(
        sep[1].contains(&format!("-m recent --name {first_sep} --set")),
        "{sep:?}"
    );
    // The tracer reads the rchecks as "no entry yet" and still reaches every endpoint with 1/100.
    let t = trace_big(&r, Layout::Tree);
    assert_eq!(t.outcomes.len(), 100);
    assert!(t.outcomes.iter().all(|o| (o.probability - 0.01).abs() <= 1e-9));
}

#[test]
fn flat_layout_and_small_services_are_unchanged() {
    let flat = render_big(200, false, Layout::Flat);
    assert!(flat.nat.iter().all(|c| !c.name.starts_with(EPG_PREFIX)));
    let svc = svc_chain("default/big:http", "tcp");
    assert_eq!(flat.chain(Table::Nat, &svc).expect("svc").rules.len(), 201);
    // At the threshold the tree layout writes the same service chains as the flat one.
    let (a, b) = (
        render_big(64, false, Layout::Tree),
        render_big(64, false, Layout::Flat),
    );
    assert_eq!(a.chain(Table::Nat, &svc), b.chain(Table::Nat, &svc));
    assert_eq!(a.owners(), b.owners());
}

#[test]
fn large_cluster_mode_drops_comments_in_leaves_too() {
    // > 1000 endpoints in total: upstream's large-cluster mode writes no per-endpoint comments.
    let r = render_big(1001, false, Layout::Tree);
    let owned = r.owners().into_values().next().expect("owned");
    let mut leaves = 0;
    for c in owned.iter().filter(|c| c.starts_with(EPG_PREFIX)) {
        let rules = &r.chain(Table::Nat, c).expect("chain").rules;
        assert!(rules.iter().all(|r| !r.contains("--comment")), "{rules:?}");
        leaves += usize::from(rules.iter().any(|r| r.contains("KUBE-SEP-")));
    }
    // 1001 = 11 groups of 91, each 10 leaves of 9-10.
    assert_eq!(leaves, 110);
}

/// (chains written, chains deleted) by a partial payload.
fn partial(before: &Rendered, after: &Rendered) -> (BTreeSet<String>, BTreeSet<String>) {
    let (text, _) = after
        .partial_payload(&before.digests())
        .expect("something changed");
    let mut written = BTreeSet::new();
    let mut deleted = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(':') {
            written.insert(rest.split_whitespace().next().unwrap_or_default().to_string());
        } else if let Some(name) = line.strip_prefix("-X ") {
            deleted.insert(name.to_string());
        }
    }
    // Declared only to be flushed before -X.
    for d in &deleted {
        written.remove(d);
    }
    (written, deleted)
}

#[test]
fn partial_syncs_write_and_delete_groups_with_their_service() {
    // Last octets of equal length: text order is numeric order.
    let ips: Vec<String> = (100..200).map(|i| format!("10.76.1.{i}")).collect();
    let before = render_yaml(&yaml_with(&ips, false), Layout::Tree);
    let svc = svc_chain("default/big:http", "tcp");
    let groups: BTreeSet<String> = before
        .owners()
        .values()
        .flatten()
        .filter(|c| c.starts_with(EPG_PREFIX))
        .cloned()
        .collect();
    assert_eq!(groups.len(), 10);

    // The endpoint that sorts last is replaced by one that sorts last too: only the last group
    // and the two endpoint chains change; the top chain (same groups, same sizes) is not rewritten.
    let mut replaced = ips.clone();
    replaced[99] = "10.76.2.100".into();
    let after = render_yaml(&yaml_with(&replaced, false), Layout::Tree);
    let (written, deleted) = partial(&before, &after);
    let old_sep = sep_chain("default/big:http", "tcp", "10.76.1.199:8080");
    let new_sep = sep_chain("default/big:http", "tcp", "10.76.2.100:8080");
    assert_eq!(written, BTreeSet::from([epg_chain(&svc, "9"), new_sep]));
    assert_eq!(deleted, BTreeSet::from([old_sep]));

    // Down to 64 endpoints: upstream's list again, every group deleted in the same restore.
    let after = render_yaml(&yaml_with(&ips[..64], false), Layout::Tree);
    let (written, deleted) = partial(&before, &after);
    assert!(written.contains(&svc));
    assert!(groups.iter().all(|g| deleted.contains(g)), "{deleted:?}");
    assert_eq!(deleted.len(), 10 + 36, "groups and the 36 endpoints gone");
    // And back: the groups come back under the same names.
    let (written, deleted) = partial(&after, &before);
    assert!(groups.iter().all(|g| written.contains(g)), "{written:?}");
    assert!(deleted.is_empty());
}

#[test]
fn local_policy_chain_gets_its_own_tree() {
    // externalTrafficPolicy Local: KUBE-SVC (all 100 endpoints) and KUBE-SVL (the 70 on this node)
    // each pick through their own groups.
    let ips: Vec<String> = (100..200).map(|i| format!("10.76.1.{i}")).collect();
    let yaml = yaml_with(&ips, false)
        .replace("nodeName: node-2", "nodeName: node-1")
        .replace(
            "spec: {clusterIP: 10.79.0.10,",
            "spec: {type: NodePort, externalTrafficPolicy: Local, clusterIP: 10.79.0.10,",
        )
        .replace("targetPort: 8080,", "targetPort: 8080, nodePort: 30080,");
    let r = render_yaml(&yaml, Layout::Tree);
    let name = "default/big:http";
    let (svc, svl) = (svc_chain(name, "tcp"), svl_chain(name, "tcp"));
    let groups_under = |owner: &str| -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut todo = vec![owner.to_string()];
        while let Some(c) = todo.pop() {
            for rule in &r.chain(Table::Nat, &c).expect("chain").rules {
                if let Some(g) = rule
                    .split_whitespace()
                    .last()
                    .filter(|t| t.starts_with(EPG_PREFIX))
                {
                    out.insert(g.to_string());
                    todo.push(g.to_string());
                }
            }
        }
        out
    };
    let (a, b) = (groups_under(&svc), groups_under(&svl));
    // 100 -> 10 groups of 10; 66 local (node-1 two in every three) -> 9 groups of 7-8.
    assert_eq!((a.len(), b.len()), (10, 9), "{a:?} {b:?}");
    assert!(a.is_disjoint(&b));
    let owned: BTreeSet<String> = r.owners().values().flatten().cloned().collect();
    assert!(a.union(&b).all(|g| owned.contains(g)));
}
