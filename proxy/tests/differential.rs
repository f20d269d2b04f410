//! The differential test (issues 17 and 31): the same cluster state in the real API server, seen by
//! upstream `kube-proxy` (v1.34, the pinned build) on one node and by `svcnet-proxy run` on an
//! identical one (`oracle`), both in iptables mode (svcnet's `--layout flat`) or both in nftables
//! mode, and after every step both nodes' rules of both families compared: `iptables-save` and
//! `ip6tables-save` normalized as upstream's own tests normalize, or `nft list table ip|ip6
//! kube-proxy` normalized as `oracle/compare_nft.rs` says. They must be identical up to the deltas
//! listed in docs/proxy-rules.md ("Differences from upstream kube-proxy"). Steps: every golden case
//! and the seeded random corpus, each created, updated and deleted one object at a time (partial
//! syncs); a second test per mode repeats part of it with rule-changing flags on both proxies. `SVCNET_DIFF_SEED` sets the seed,
//! `SVCNET_DIFF_ROUNDS` the number of random clusters, `SVCNET_DIFF_FILTER` keeps only the steps whose
//! name contains it (a golden case, `golden/policies:`, or a round, `round 3:`).

mod common;
mod lab;
mod oracle;
mod upstream_norm;

use std::collections::BTreeSet;
use std::time::Instant;

use oracle::corpus::{Step, golden, random};
use oracle::{Env, Mode};

/// The seed CI runs with (any other is a rerun away: `SVCNET_DIFF_SEED`).
const DEFAULT_SEED: u64 = 17;
const DEFAULT_ROUNDS: usize = 8;
/// Random clusters of the nftables run (CI time: see docs/proxy-rules.md).
const NFT_ROUNDS: usize = 8;
/// Rule-changing flags for both proxies: masquerade-all, local traffic by the node's pod CIDR,
/// NodePorts only on the node's addresses (so no localhost NodePorts), another masquerade bit.
const OTHER_FLAGS: [&str; 7] = [
    "--masquerade-all",
    "--detect-local-mode",
    "NodeCIDR",
    "--nodeport-addresses",
    "10.140.0.0/24,fd00:140::/64",
    "--iptables-masquerade-bit",
    "5",
];
/// The golden inputs whose rules [`OTHER_FLAGS`] change most.
const OTHER_FLAGS_CASES: [&str; 3] = ["policies", "walkthrough", "dualstack"];

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

/// Runs `steps` (those matching `SVCNET_DIFF_FILTER`) on a fresh environment whose proxies both run
/// in `mode` with `flags`; prints and returns the number of states compared (None: skipped, no
/// namespaces).
fn run(tag: &str, mode: Mode, flags: &[&str], mut steps: Vec<Step>, seed: u64) -> Option<usize> {
    let filter = std::env::var("SVCNET_DIFF_FILTER").unwrap_or_default();
    steps.retain(|s| s.name.contains(&filter));
    let t0 = Instant::now();
    let mut env = Env::start(tag, mode, flags)?;
    let started = t0.elapsed();
    let report = env.run(&steps, seed);
    if mode == Mode::Nftables {
        println!(
            "{} of them with upstream's flushed chains awaiting deletion",
            report.with_flushed_chains
        );
    }
    println!(
        "{} states compared, {} mode, ip and ip6 (seed {seed}, flags [{}]) in {:.0} s after a {:.0} s start; slowest step {:.1} s ({})",
        report.states,
        mode.flag(),
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
    let Some(states) = run("diff", Mode::Iptables, &[], steps, seed) else {
        return;
    };
    let full = rounds == DEFAULT_ROUNDS && std::env::var_os("SVCNET_DIFF_FILTER").is_none();
    if full {
        assert!(states >= 200, "the CI corpus is at least 200 states");
    }
}

/// [`OTHER_FLAGS`] on both proxies, over [`OTHER_FLAGS_CASES`] and one random cluster.
#[test]
fn differential_against_upstream_kube_proxy_with_other_flags() {
    let seed = env_or("SVCNET_DIFF_SEED", DEFAULT_SEED);
    let mut steps = golden_steps(&OTHER_FLAGS_CASES);
    steps.extend(random_steps(seed, 1));
    run("diffl", Mode::Iptables, &OTHER_FLAGS, steps, seed);
}

/// nftables mode, both families: `kube-proxy --proxy-mode nftables` and `svcnet-proxy run
/// --proxy-mode nftables` over the golden inputs and `NFT_ROUNDS` random clusters, default flags
/// (so NodePorts on the primary IPs and the ServiceCIDRs from the API, on both sides).
#[test]
fn differential_nftables_against_upstream_kube_proxy() {
    let seed = env_or("SVCNET_DIFF_SEED", DEFAULT_SEED);
    let rounds = env_or("SVCNET_DIFF_NFT_ROUNDS", NFT_ROUNDS);
    let mut steps = golden_steps(&[]);
    steps.extend(random_steps(seed, rounds));
    let Some(states) = run("dnft", Mode::Nftables, &[], steps, seed) else {
        return;
    };
    let full = rounds == NFT_ROUNDS && std::env::var_os("SVCNET_DIFF_FILTER").is_none();
    if full {
        assert!(states >= 200, "the nftables CI corpus is at least 200 states");
    }
}

/// nftables mode with [`OTHER_FLAGS`], over [`OTHER_FLAGS_CASES`] and one random cluster.
#[test]
fn differential_nftables_with_other_flags() {
    let seed = env_or("SVCNET_DIFF_SEED", DEFAULT_SEED);
    let mut steps = golden_steps(&OTHER_FLAGS_CASES);
    steps.extend(random_steps(seed, 1));
    run("dnftl", Mode::Nftables, &OTHER_FLAGS, steps, seed);
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

/// The nftables comparison accepts what the kernel or the write order decides (object order, element
/// order) and upstream's flushed chains awaiting deletion, and nothing else: a changed or reordered
/// rule, or an empty chain on svcnet's side, is reported.
#[test]
fn nft_comparison_ignores_only_object_and_element_order_and_flushed_chains() {
    let a = r#"table ip kube-proxy {
	comment "rules for kube-proxy"
	set cluster-ips {
		type ipv4_addr
		comment "Active ClusterIPs"
		elements = { 10.96.0.1, 10.96.0.10,
			     10.96.7.7 }
	}

	map service-ips {
		type ipv4_addr . inet_proto . inet_service : verdict
		comment "ClusterIP, ExternalIP and LoadBalancer IP traffic"
		elements = { 10.96.0.1 . tcp . 443 : goto service-2QRHZV4L-default/kubernetes/tcp/https,
			     10.96.0.10 . udp . 53 : goto service-ZGDY2EOV-kube-system/dns/udp/dns }
	}

	chain services {
		ip daddr . meta l4proto . th dport vmap @service-ips
		ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports
	}

	chain service-2QRHZV4L-default/kubernetes/tcp/https {
		ip daddr 10.96.0.1 tcp dport 443 ip saddr != 10.76.0.0/14 jump mark-for-masquerade
		numgen random mod 1 vmap { 0 : goto endpoint-AAAA-default/kubernetes/tcp/https__10.0.0.1/6443 }
	}

	chain service-ZGDY2EOV-kube-system/dns/udp/dns {
	}
}
"#;
    let lines: Vec<&str> = a.lines().collect();
    let edit = |f: &dyn Fn(&mut Vec<&str>)| {
        let mut l = lines.clone();
        f(&mut l);
        l.join("\n")
    };
    let cmp = |up: &str, sv: &str| oracle::compare_nft::compare("t", up, sv);
    assert!(cmp(a, a).diff.is_none());
    // Elements in another order and another wrapping; objects in another order.
    let elements = a.replace(
        "{ 10.96.0.1, 10.96.0.10,\n\t\t\t     10.96.7.7 }",
        "{ 10.96.7.7, 10.96.0.1, 10.96.0.10 }",
    );
    assert_ne!(elements, a);
    assert!(cmp(a, &elements).diff.is_none());
    let objects = edit(&|l| {
        let chain: Vec<&str> = l.drain(21..25).collect();
        l.splice(2..2, chain);
    });
    assert!(cmp(a, &objects).diff.is_none(), "{objects}");
    // Two rules of a chain swapped: upstream writes them in a fixed order.
    assert!(cmp(a, &edit(&|l| l.swap(22, 23))).diff.is_some());
    // A changed element.
    let changed = a.replace("10.96.7.7", "10.96.7.8");
    assert!(cmp(a, &changed).diff.is_some());
    // An empty per-service chain nothing refers to: upstream's flushed chain is dropped (and
    // counted), svcnet's is a difference.
    let flushed = a.replace(
        "\tchain services {",
        "\tchain service-OLD00000-default/gone/tcp/p80 {\n\t}\n\n\tchain services {",
    );
    let c = cmp(&flushed, a);
    assert!(c.diff.is_none(), "{:?}", c.diff);
    assert_eq!(c.flushed, 1);
    assert!(cmp(a, &flushed).diff.is_some());
    // An empty chain something still refers to is no flushed chain (the dns one above is referenced
    // by the map; dropping it from one side is a difference).
    let without_dns = edit(&|l| {
        l.drain(26..28);
    });
    assert!(cmp(a, &without_dns).diff.is_some(), "{without_dns}");
    assert_eq!(cmp(a, a).flushed, 0);
}
