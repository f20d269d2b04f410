//! The endpoint tree (KUBE-EPG-* chains under services with more than 64 endpoints, tree layout)
//! end to end: `svcnet-proxy render` + `svcnet-proxy trace` as an operator runs them, and the real
//! iptables-restore/iptables-save in a throwaway network namespace.

mod common;

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::process::Command;

use clap::Parser;
use svcnet_proxy::cli::{Cli, Command as Sub};
use svcnet_proxy::config::{DetectLocal, Layout, RenderConfig};
use svcnet_proxy::iptables::render::{FullOptions, Rendered, render};
use svcnet_proxy::model::{NodeFacts, ProxyState};
use svcnet_proxy::offline::input::parse_objects;
use svcnet_proxy::offline::run_render;
use svcnet_proxy::offline::trace::{self, Hook, Packet, Proto, Ruleset, TraceOptions, Verdict};

/// Service `default/<name>` on `<cip>:80` with `n` ready endpoints `10.<net>.x.y:8080`.
fn service_yaml(name: &str, cip: &str, net: u8, n: usize, affinity: bool) -> String {
    let aff = if affinity {
        ", sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 600}}"
    } else {
        ""
    };
    let mut y = format!(
        "---\nkind: Service\nmetadata: {{name: {name}, namespace: default}}\nspec: {{clusterIP: {cip}, ports: [{{name: http, port: 80, targetPort: 8080, protocol: TCP}}]{aff}}}\n---\nkind: EndpointSlice\nmetadata: {{name: {name}-x, namespace: default, labels: {{kubernetes.io/service-name: {name}}}}}\naddressType: IPv4\nports: [{{name: http, port: 8080, protocol: TCP}}]\nendpoints:\n"
    );
    for i in 0..n {
        y.push_str(&format!(
            "- {{addresses: [10.{net}.{}.{}], conditions: {{ready: true}}, nodeName: node-1}}\n",
            i / 200,
            i % 200 + 1
        ));
    }
    y
}

fn endpoints(net: u8, n: usize) -> BTreeSet<SocketAddr> {
    (0..n)
        .map(|i| {
            let ip: IpAddr = format!("10.{net}.{}.{}", i / 200, i % 200 + 1)
                .parse()
                .expect("ip");
            SocketAddr::new(ip, 8080)
        })
        .collect()
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_svcnet-proxy"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run svcnet-proxy");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn cli_trace_reports_each_of_200_endpoints_with_one_in_200() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("input.yaml");
    std::fs::write(&input, service_yaml("big", "10.79.0.10", 76, 200, false)).expect("write");
    let payload = run(bin().args(["render", "-f"]).arg(&input).args([
        "--cluster-cidr",
        "10.76.0.0/14",
        "--layout",
        "tree",
    ]));
    let groups = payload.lines().filter(|l| l.starts_with(":KUBE-EPG-")).count();
    assert_eq!(groups, 15, "200 endpoints: 15 groups of 13-14\n{payload}");
    let rules = dir.path().join("rules");
    std::fs::write(&rules, &payload).expect("write");

    let report = run(bin()
        .args(["trace", "--rules"])
        .arg(&rules)
        .args(["--src", "10.76.9.9", "--dst", "10.79.0.10", "--dport", "80"])
        .args(["--in-iface", "cbr0", "--node-ip", "10.140.0.2"]));
    // "0.5%: DNAT -> 10.76.0.1:8080 (masquerade: no)" once per endpoint.
    let mut seen = BTreeSet::new();
    for line in report.lines().filter(|l| l.contains("%: ")) {
        let (pct, rest) = line.split_once("%: ").expect("outcome line");
        assert_eq!(pct, "0.5", "{line}");
        let to = rest
            .strip_prefix("DNAT -> ")
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("not a DNAT: {line}"));
        assert!(seen.insert(to.parse::<SocketAddr>().expect("addr")), "{to} twice");
    }
    assert_eq!(seen, endpoints(76, 200), "{report}");
    assert!(report.contains("total: 100.0% over 200 outcomes"), "{report}");
    assert!(
        report.contains("-j KUBE-EPG-"),
        "paths go through the groups:\n{report}"
    );
    assert!(!report.contains("warning:"), "{report}");

    // The same payload through the library: exactly 1/200 each, not just "0.5%" rounded.
    let ruleset = trace::parse(&payload).expect("parses");
    let t = trace_to(&ruleset, "10.79.0.10");
    assert_eq!(t.len(), 200);
    assert!(t.iter().all(|(_, p)| (p - 1.0 / 200.0).abs() <= 1e-9), "{t:?}");
}

/// (endpoint, probability) of a pod's new connection to `dst`:80.
fn trace_to(rules: &Ruleset, dst: &str) -> Vec<(SocketAddr, f64)> {
    let packet = Packet {
        src: "10.76.9.9".parse().expect("ip"),
        dst: dst.parse().expect("ip"),
        dport: 80,
        proto: Proto::Tcp,
        in_iface: Some("cbr0".into()),
    };
    let opts = TraceOptions {
        node_ips: vec!["10.140.0.2".parse().expect("ip")],
        hook: Hook::Prerouting,
    };
    let t = trace::trace(rules, &packet, &opts);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    t.outcomes
        .iter()
        .map(|o| match o.verdict {
            Verdict::Dnat(to) => (to, o.probability),
            other => panic!("{other} for {dst}"),
        })
        .collect()
}

/// `iptables-save` output without its `#` comment lines (they carry a timestamp).
fn strip(saved: &str) -> String {
    saved
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn tree_of_300_endpoints_loads_into_real_iptables_and_round_trips() {
    let Some(ns) = common::netns_with_nfacct("eptree") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("input.yaml");
    let yaml = service_yaml("big", "10.79.0.10", 76, 300, false)
        + &service_yaml("sticky", "10.79.0.11", 77, 300, true);
    std::fs::write(&input, yaml).expect("write");
    let argv = [
        "svcnet-proxy",
        "render",
        "-f",
        input.to_str().expect("utf-8 path"),
        "--cluster-cidr",
        "10.76.0.0/14",
        "--layout",
        "tree",
    ];
    let Sub::Render(args) = Cli::try_parse_from(argv).expect("args").command else {
        panic!("not render")
    };
    let payload = run_render(&args).expect("render");
    assert!(payload.contains(":KUBE-EPG-"), "300 endpoints build a tree");

    let (ok, _, err) = ns.exec(&["iptables-restore", "--test", "--noflush"], &payload);
    assert!(ok, "iptables-restore --test: {err}");
    let (ok, _, err) = ns.exec(
        &["iptables-restore", "--noflush", "--counters", "-w", "5"],
        &payload,
    );
    assert!(ok, "iptables-restore: {err}");
    let (ok, saved, err) = ns.exec(&["iptables-save"], "");
    assert!(ok, "iptables-save: {err}");

    // Every chain of ours is in the kernel with the same rules (the kernel prints probabilities with
    // 11 decimals of its fixed-point value, so rules are compared by count and by tracing).
    let ours = trace::parse(&payload).expect("our payload parses");
    let kernel = trace::parse(&saved).unwrap_or_else(|e| panic!("iptables-save output: {e}\n{saved}"));
    let mut groups = 0;
    for table in ["filter", "nat"] {
        for chain in ours.chains(table) {
            assert_eq!(
                ours.rules(table, chain).len(),
                kernel.rules(table, chain).len(),
                "{table} {chain} differs after restore"
            );
            groups += usize::from(chain.starts_with("KUBE-EPG-"));
        }
    }
    // 300 endpoints: 7 groups (7^3 >= 300) of 42-43, each 7 groups of 6-7, twice.
    assert_eq!(groups, 2 * (7 + 49), "KUBE-EPG chains in the payload");
    for (dst, net) in [("10.79.0.10", 76), ("10.79.0.11", 77)] {
        let a = trace_to(&ours, dst);
        let b = trace_to(&kernel, dst);
        let want = endpoints(net, 300);
        for t in [&a, &b] {
            assert_eq!(
                t.iter().map(|(to, _)| *to).collect::<BTreeSet<_>>(),
                want,
                "{dst}"
            );
            // The kernel stores probabilities as 32-bit fixed point: 1/300 to ~1e-9.
            assert!(
                t.iter().all(|(_, p)| (p - 1.0 / 300.0).abs() <= 1e-8),
                "{dst}: {t:?}"
            );
        }
    }

    // Round trip: what the kernel saved loads again into a fresh namespace and saves identically.
    let Some(ns2) = common::netns_with_nfacct("eptree2") else {
        return;
    };
    let (ok, _, err) = ns2.exec(&["iptables-restore"], &saved);
    assert!(ok, "iptables-restore of iptables-save output: {err}");
    let (ok, saved2, err) = ns2.exec(&["iptables-save"], "");
    assert!(ok, "iptables-save: {err}");
    assert_eq!(strip(&saved), strip(&saved2), "iptables-save does not round-trip");
    assert!(saved.contains("-A KUBE-EPG-"), "the kernel holds the groups");
}

fn render_yaml(yaml: &str) -> (Rendered, RenderConfig) {
    let cfg = RenderConfig {
        layout: Layout::Tree,
        detect_local: DetectLocal::ClusterCidr(vec!["10.76.0.0/14".parse().expect("cidr")]),
        ..Default::default()
    };
    let node = NodeFacts {
        name: "node-1".into(),
        ips: vec!["10.140.0.2".parse().expect("ip")],
        ..Default::default()
    };
    let objs = parse_objects(yaml).expect("yaml");
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, cfg.family);
    assert!(state.errors.is_empty(), "{:?}", state.errors);
    (render(&state, &node, &cfg), cfg)
}

/// Loads `payload` with the daemon's restore flags and returns the kernel's rules.
fn restore_and_save(ns: &svcnet_netns::Netns, payload: &str) -> Ruleset {
    let (ok, _, err) = ns.exec(
        &[
            "iptables-restore",
            "--noflush",
            "--counters",
            "-w",
            "5",
            "-W",
            "100000",
        ],
        payload,
    );
    assert!(ok, "iptables-restore: {err}\n{payload}");
    let (ok, saved, err) = ns.exec(&["iptables-save", "-t", "nat"], "");
    assert!(ok, "iptables-save: {err}");
    trace::parse(&saved).unwrap_or_else(|e| panic!("iptables-save output: {e}\n{saved}"))
}

fn groups_in(rules: &Ruleset) -> usize {
    rules.chains("nat").filter(|c| c.starts_with("KUBE-EPG-")).count()
}

#[test]
fn partial_syncs_grow_and_shrink_the_tree_in_the_kernel() {
    let Some(ns) = common::netns_with_nfacct("eptree-partial") else {
        return;
    };
    let sticky = service_yaml("sticky", "10.79.0.11", 77, 300, true);
    let (full, cfg) = render_yaml(&(service_yaml("big", "10.79.0.10", 76, 300, false) + &sticky));
    let (payload, _) = full.payload(
        &FullOptions {
            jumps: true,
            ..Default::default()
        },
        &cfg,
    );
    let kernel = restore_and_save(&ns, &payload);
    assert_eq!(groups_in(&kernel), 2 * 56);

    // big shrinks to 64 endpoints: its groups are flushed and deleted in the same restore that
    // rewrites its KUBE-SVC chain; sticky's tree is untouched.
    let (small, _) = render_yaml(&(service_yaml("big", "10.79.0.10", 76, 64, false) + &sticky));
    let (partial, _) = small.partial_payload(&full.digests()).expect("changed");
    assert!(partial.contains("-X KUBE-EPG-"), "{partial}");
    let kernel = restore_and_save(&ns, &partial);
    assert_eq!(groups_in(&kernel), 56, "only sticky's groups are left");
    let t = trace_to(&kernel, "10.79.0.10");
    assert_eq!(
        t.iter().map(|(to, _)| *to).collect::<BTreeSet<_>>(),
        endpoints(76, 64)
    );
    assert!(t.iter().all(|(_, p)| (p - 1.0 / 64.0).abs() <= 1e-8));

    // Then grows to 1000: 110 groups appear, each endpoint 1/1000.
    let (large, _) = render_yaml(&(service_yaml("big", "10.79.0.10", 76, 1000, false) + &sticky));
    let (partial, _) = large.partial_payload(&small.digests()).expect("changed");
    let kernel = restore_and_save(&ns, &partial);
    assert_eq!(groups_in(&kernel), 56 + 110);
    let t = trace_to(&kernel, "10.79.0.10");
    assert_eq!(
        t.iter().map(|(to, _)| *to).collect::<BTreeSet<_>>(),
        endpoints(76, 1000)
    );
    assert!(t.iter().all(|(_, p)| (p - 1.0 / 1000.0).abs() <= 1e-8));
    let t = trace_to(&kernel, "10.79.0.11");
    assert_eq!(t.len(), 300);
}
