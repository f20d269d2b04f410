//! The differential test (issue 17): the same cluster state in the real API server, seen by upstream
//! `kube-proxy --proxy-mode iptables` (v1.34, the pinned build) on one node and by
//! `svcnet-proxy run --layout flat` on an identical one (`oracle`), and after every step both nodes'
//! `iptables-save` and `ip6tables-save` compared, normalized as upstream's own tests normalize. They
//! must be identical up to the deltas listed in docs/proxy-rules.md ("Differences from upstream
//! kube-proxy"). Steps: every golden case and the seeded random corpus, each created, updated and
//! deleted one object at a time (partial syncs); a second test repeats part of it with rule-changing
//! flags on both proxies. `SVCNET_DIFF_SEED` sets the seed,
//! `SVCNET_DIFF_ROUNDS` the number of random clusters, `SVCNET_DIFF_FILTER` keeps only the steps whose
//! name contains it (a golden case, `golden/policies:`, or a round, `round 3:`).

mod common;
mod lab;
mod oracle;
mod upstream_norm;

use std::collections::BTreeSet;
use std::time::Instant;

use oracle::Env;
use oracle::corpus::{Step, golden, random};

/// The seed CI runs with (any other is a rerun away: `SVCNET_DIFF_SEED`).
const DEFAULT_SEED: u64 = 17;
const DEFAULT_ROUNDS: usize = 8;

/// Not a test: the environment's HTTP probes run this binary with `SVCNET_HELPER` set.
#[test]
#[ignore = "helper process for the lab, started by the other tests"]
fn helper() {
    lab::helper::main();
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Every golden input's steps (the walkthrough among them), sorted by case; `only` keeps those
/// cases (all when empty).
fn golden_steps(only: &[&str]) -> Vec<Step> {
    let inputs: BTreeSet<_> = common::golden_cases()
        .into_iter()
        .map(|(input, _, _)| input)
        .collect();
    let mut steps = Vec::new();
    for input in &inputs {
        let case = input
            .parent()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if only.is_empty() || only.contains(&case.as_str()) {
            steps.extend(golden::steps(&case, input));
        }
    }
    steps
}

/// The random corpus of `rounds` clusters from `seed`.
fn random_steps(seed: u64, rounds: usize) -> Vec<Step> {
    let clusters = random::clusters(seed, rounds);
    println!("corpus: {}", random::summary(&clusters));
    clusters
        .iter()
        .enumerate()
        .flat_map(|(round, svcs)| random::steps(seed, round, svcs))
        .collect()
}

/// Runs `steps` (those matching `SVCNET_DIFF_FILTER`) on a fresh environment whose proxies both get
/// `flags`; prints and returns the number of states compared (None: skipped, no namespaces).
fn run(tag: &str, flags: &[&str], mut steps: Vec<Step>, seed: u64) -> Option<usize> {
    let filter = std::env::var("SVCNET_DIFF_FILTER").unwrap_or_default();
    steps.retain(|s| s.name.contains(&filter));
    let t0 = Instant::now();
    let mut env = Env::start(tag, flags)?;
    let started = t0.elapsed();
    let report = env.run(&steps, seed);
    println!(
        "{} states compared (seed {seed}, flags [{}]) in {:.0} s after a {:.0} s start; slowest step {:.1} s ({})",
        report.states,
        flags.join(" "),
        (t0.elapsed() - started).as_secs_f64(),
        started.as_secs_f64(),
        report.slowest.as_secs_f64(),
        report.slowest_step
    );
    assert_eq!(report.states, steps.len(), "every step is a compared state");
    Some(report.states)
}

/// The whole corpus with the default flags (only those the environment needs).
#[test]
fn differential_against_upstream_kube_proxy() {
    let seed = env_or("SVCNET_DIFF_SEED", DEFAULT_SEED);
    let rounds = env_or("SVCNET_DIFF_ROUNDS", DEFAULT_ROUNDS);
    let mut steps = golden_steps(&[]);
    steps.extend(random_steps(seed, rounds));
    let Some(states) = run("diff", &[], steps, seed) else {
        return;
    };
    let full = rounds == DEFAULT_ROUNDS && std::env::var_os("SVCNET_DIFF_FILTER").is_none();
    if full {
        assert!(states >= 200, "the CI corpus is at least 200 states");
    }
}

/// Rule-changing flags on both proxies: masquerade-all, local traffic by the node's pod CIDR,
/// NodePorts only on the node's addresses (so no localhost NodePorts), another masquerade bit; over
/// the golden inputs whose rules they change most and one random cluster.
#[test]
fn differential_against_upstream_kube_proxy_with_other_flags() {
    let seed = env_or("SVCNET_DIFF_SEED", DEFAULT_SEED);
    let mut steps = golden_steps(&["policies", "walkthrough", "dualstack"]);
    steps.extend(random_steps(seed, 1));
    let flags = [
        "--masquerade-all",
        "--detect-local-mode",
        "NodeCIDR",
        "--nodeport-addresses",
        "10.140.0.0/24,fd00:140::/64",
        "--iptables-masquerade-bit",
        "5",
    ];
    run("diffl", &flags, steps, seed);
}

/// The comparison accepts what upstream leaves to chance or the kernel (counters, policies, the order
/// of service ports in the map-ordered chains) and nothing else: a changed rule, or rules of one
/// service port reordered, are reported.
#[test]
fn comparison_ignores_only_map_order_and_counters() {
    let a = r#"# Generated by iptables-save v1.8.9 (nf_tables)
*filter
:INPUT ACCEPT [10:2000]
:KUBE-EXTERNAL-SERVICES - [0:0]
-A KUBE-EXTERNAL-SERVICES -d 35.0.0.2/32 -p tcp -m comment --comment "web/b has no local endpoints" -m tcp --dport 80 -j DROP
-A KUBE-EXTERNAL-SERVICES -p tcp -m comment --comment "web/a:p has no endpoints" -m addrtype --dst-type LOCAL -m tcp --dport 30612 -j REJECT --reject-with icmp-port-unreachable
COMMIT
*nat
:PREROUTING ACCEPT [3:180]
:KUBE-SERVICES - [0:0]
-A KUBE-SERVICES -d 10.96.0.2/32 -p tcp -m comment --comment "web/m:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-FZT6LHFUQEJ62S6A
-A KUBE-SERVICES -d 10.96.0.2/32 -p tcp -m comment --comment "web/m:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-EU2HPJ3NMP6MDJLR
-A KUBE-SERVICES -d 35.0.0.3/32 -p tcp -m comment --comment "web/m:http loadbalancer IP" -m tcp --dport 80 -j KUBE-EXT-EU2HPJ3NMP6MDJLR
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
COMMIT
"#;
    let lines: Vec<&str> = a.lines().collect();
    let swap = |i: usize, j: usize| {
        let mut l = lines.clone();
        l.swap(i, j);
        l.join("\n")
    };
    let recounted = a.replace("[10:2000]", "[0:0]").replace("[3:180]", "[7:420]");
    assert_eq!(oracle::compare::compare("t", a, &recounted), None);
    // Two services in KUBE-EXTERNAL-SERVICES, two ports of one service in KUBE-SERVICES: map order.
    assert_eq!(oracle::compare::compare("t", a, &swap(4, 5)), None);
    assert_eq!(oracle::compare::compare("t", a, &swap(10, 11)), None);
    // Two rules of one service port: upstream writes them in a fixed order.
    assert!(oracle::compare::compare("t", a, &swap(11, 12)).is_some());
    let changed = a.replace("--dport 30612", "--dport 30613");
    let diff = oracle::compare::compare("t", a, &changed).expect("a changed rule differs");
    assert!(diff.contains("+-A KUBE-EXTERNAL-SERVICES") && diff.contains("--dport 30613"));
}
