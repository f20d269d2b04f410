//! Upstream kube-proxy's packet-flow expectations (`runPacketFlowTests` in
//! pkg/proxy/iptables/proxier_test.go, v1.33/1.34) against the real `svcnet-proxy render`, traced with
//! `svcnet_proxy::offline::trace` in both layouts.
//!
//! `tests/upstream_flows/<case>/` holds `SOURCE` (the upstream test and subtest), `flags` (render flags
//! matching upstream's NewFakeProxier and the test's settings, without `--layout`), and one or more steps:
//! `input.yaml` + `flows.txt`, then `input.2.yaml` + `flows.2.txt`... when upstream changes objects and
//! syncs again (each input is the whole object set at that sync). A flows file has one flow per line,
//! `name | source | destination | port[/udp|/sctp] | output | masq`, with upstream's values verbatim:
//! output is upstream's comma-separated endpoint list, `DROP`, `REJECT`, `ACCEPT`, or empty.
//!
//! Upstream's tracer (`tracePacket`) always starts in nat PREROUTING and treats a source in
//! {127.0.0.1, ::1} + testNodeIPs as `addrtype LOCAL`; here such a source is traced as a packet the node
//! itself sends (nat OUTPUT), which is what that stands for, and everything else as arriving
//! (PREROUTING). Our trace is reduced to upstream's terms: the set of DNAT endpoints, DROP/REJECT
//! verdicts, ACCEPT when a KUBE-* chain accepted the packet, and masq when any outcome is masqueraded
//! (upstream records KUBE-MARK-MASQ on any path).

mod common;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use svcnet_proxy::offline::trace::{self, Hook, Packet, Proto, Ruleset, Trace, TraceOptions, Verdict};

/// Upstream's testNodeIPs: the node's addresses as its tracer sees them (plus loopback).
const TEST_NODE_IPS: &[&str] = &[
    "192.168.0.2",
    "192.168.1.2",
    "192.168.99.11",
    "2001:db8::1",
    "2001:db8:1::2",
];

const LAYOUTS: &[&str] = &["flat", "tree"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstream_flows")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One upstream packetFlowTest.
#[derive(Debug)]
struct Flow {
    line: usize,
    name: String,
    src: IpAddr,
    dst: IpAddr,
    port: u16,
    proto: Proto,
    /// Upstream's output split on ", ", sorted (upstream lists endpoints in rule order).
    output: BTreeSet<String>,
    masq: bool,
}

fn parse_flows(text: &str) -> Result<Vec<Flow>, String> {
    let mut flows = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let cells: Vec<&str> = trimmed.split('|').map(str::trim).collect();
        let [name, src, dst, port, output, masq] = cells[..] else {
            return Err(format!(
                "line {line}: expected 6 cells separated by |, got {}",
                cells.len()
            ));
        };
        let ip = |s: &str| {
            s.parse::<IpAddr>()
                .map_err(|e| format!("line {line}: {s:?}: {e}"))
        };
        let (port, proto) = match port.split_once('/') {
            Some((p, proto)) => (
                p,
                proto.parse::<Proto>().map_err(|e| format!("line {line}: {e}"))?,
            ),
            None => (port, Proto::Tcp),
        };
        flows.push(Flow {
            line,
            name: name.to_string(),
            src: ip(src)?,
            dst: ip(dst)?,
            port: port
                .parse()
                .map_err(|e| format!("line {line}: port {port:?}: {e}"))?,
            proto,
            output: output
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
            masq: match masq {
                "true" => true,
                "false" => false,
                other => return Err(format!("line {line}: masq must be true or false, not {other:?}")),
            },
        });
    }
    Ok(flows)
}

/// Every case directory, sorted.
fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root())
        .expect("tests/upstream_flows")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    cases
}

/// The steps of a case: (input, flows) for `input.yaml`/`flows.txt`, `input.2.yaml`/`flows.2.txt`, ...
fn steps(case: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut steps = Vec::new();
    for n in 1.. {
        let suffix = if n == 1 { String::new() } else { format!(".{n}") };
        let input = case.join(format!("input{suffix}.yaml"));
        let flows = case.join(format!("flows{suffix}.txt"));
        match (input.exists(), flows.exists()) {
            (true, true) => steps.push((input, flows)),
            (false, false) => break,
            _ => panic!("{}: step {n} needs both input and flows files", case.display()),
        }
    }
    steps
}

/// `svcnet-proxy render -f <input> <flags> --layout <layout>` (built-in jumps included, as the tracer
/// needs them).
fn render(case: &Path, input: &Path, layout: &str) -> Result<String, String> {
    common::render_with_flags_file(input, &case.join("flags"), &["--layout", layout])
}

fn node_ips() -> Vec<IpAddr> {
    TEST_NODE_IPS
        .iter()
        .map(|s| s.parse().expect("node IP"))
        .collect()
}

/// Traces one flow as upstream's tracer would see it (see the module doc for the hook).
fn trace_flow(rules: &Ruleset, flow: &Flow, node_ips: &[IpAddr]) -> Trace {
    let from_node = flow.src.is_loopback() || node_ips.contains(&flow.src);
    let opts = TraceOptions {
        node_ips: node_ips.to_vec(),
        hook: if from_node { Hook::Output } else { Hook::Prerouting },
    };
    let packet = Packet {
        src: flow.src,
        dst: flow.dst,
        dport: flow.port,
        proto: flow.proto,
        in_iface: None,
    };
    trace::trace(rules, &packet, &opts)
}

/// Our trace in upstream's terms: output set and masq.
fn upstream_terms(trace: &Trace) -> (BTreeSet<String>, bool) {
    let mut output = BTreeSet::new();
    for o in &trace.outcomes {
        match o.verdict {
            Verdict::Dnat(to) => {
                output.insert(to.to_string());
            }
            Verdict::Drop => {
                output.insert("DROP".to_string());
            }
            Verdict::Reject => {
                output.insert("REJECT".to_string());
            }
            Verdict::Accept => {
                let accepted = o.steps.iter().any(|s| {
                    s.chain.starts_with("KUBE-")
                        && s.rule
                            .split_whitespace()
                            .collect::<Vec<_>>()
                            .ends_with(&["-j", "ACCEPT"])
                });
                if accepted {
                    output.insert("ACCEPT".to_string());
                }
            }
        }
    }
    let masq = trace.outcomes.iter().any(|o| o.masquerade);
    (output, masq)
}

/// Upstream's tracer does not weigh branches, but kube-proxy picks every endpoint of a chain with the
/// same probability; when a flow has no DROP/REJECT outcome its endpoints must be equally likely (this
/// also checks the tree layout's KUBE-EPG groups). Some(description) when they are not.
fn uneven_endpoints(trace: &Trace) -> Option<String> {
    let summary = trace.summary();
    if summary.iter().any(|(v, _, _)| !matches!(v, Verdict::Dnat(_))) {
        return None;
    }
    let mut per_endpoint: Vec<(String, f64)> = Vec::new();
    for (verdict, _, p) in &summary {
        let key = format!("{verdict:?}");
        match per_endpoint.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 += p,
            None => per_endpoint.push((key, *p)),
        }
    }
    let want = 1.0 / per_endpoint.len() as f64;
    per_endpoint
        .iter()
        .any(|(_, p)| (p - want).abs() > 1e-9)
        .then(|| format!("{per_endpoint:?}"))
}

fn show(output: &BTreeSet<String>) -> String {
    let items: Vec<&str> = output.iter().map(String::as_str).collect();
    format!("{:?}", items.join(", "))
}

/// Compares one flow in one layout; None when it matches upstream.
fn compare(rules: &Ruleset, flow: &Flow, node_ips: &[IpAddr]) -> Option<String> {
    let trace = trace_flow(rules, flow, node_ips);
    let (output, masq) = upstream_terms(&trace);
    let uneven = uneven_endpoints(&trace);
    if output == flow.output && masq == flow.masq && trace.warnings.is_empty() && uneven.is_none() {
        return None;
    }
    let mut report = format!(
        "line {} {:?} ({} {} -> {}:{}): upstream output {} masq {}, svcnet output {} masq {}",
        flow.line,
        flow.name,
        flow.proto,
        flow.src,
        flow.dst,
        flow.port,
        show(&flow.output),
        flow.masq,
        show(&output),
        masq
    );
    if let Some(uneven) = uneven {
        report.push_str(&format!("\n    endpoints not equally likely: {uneven}"));
    }
    for w in &trace.warnings {
        report.push_str(&format!("\n    tracer warning: {w}"));
    }
    for o in &trace.outcomes {
        report.push_str(&format!(
            "\n    {:.1}%: {:?} masquerade {}",
            o.probability * 100.0,
            o.verdict,
            o.masquerade
        ));
        for s in &o.steps {
            report.push_str(&format!("\n        {} {}", s.table, s.rule));
        }
    }
    Some(report)
}

/// Runs every case; returns (flows compared, failure reports).
fn run_all() -> (usize, Vec<String>) {
    let node_ips = node_ips();
    let mut compared = 0;
    let mut failures = Vec::new();
    for case in cases() {
        let source = read(&case.join("SOURCE"));
        let steps = steps(&case);
        if steps.is_empty() {
            failures.push(format!("=== {}: no steps", case.display()));
        }
        for (input, flows_file) in steps {
            let flows = match parse_flows(&read(&flows_file)) {
                Ok(flows) if !flows.is_empty() => flows,
                Ok(_) => {
                    failures.push(format!("=== {}: no flows", flows_file.display()));
                    continue;
                }
                Err(e) => {
                    failures.push(format!("=== {}: {e}", flows_file.display()));
                    continue;
                }
            };
            for layout in LAYOUTS {
                let rules = match render(&case, &input, layout).and_then(|text| {
                    trace::parse(&text).map_err(|e| format!("parsing the payload: {e}\n{text}"))
                }) {
                    Ok(rules) => rules,
                    Err(e) => {
                        failures.push(format!("=== {} ({layout}): {e}", input.display()));
                        continue;
                    }
                };
                for flow in &flows {
                    if let Some(report) = compare(&rules, flow, &node_ips) {
                        failures.push(format!(
                            "=== {} --layout {layout} ({})\n{report}",
                            flows_file.display(),
                            source.trim()
                        ));
                    }
                }
            }
            compared += flows.len();
        }
    }
    (compared, failures)
}

/// Every upstream packet flow gives upstream's outcome in both layouts.
#[test]
fn upstream_packet_flows() {
    let (compared, failures) = run_all();
    assert!(compared > 0, "no upstream flows found under {}", root().display());
    assert!(
        failures.is_empty(),
        "{} flow checks differ from upstream:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{compared} flows compared (each in the flat and the tree layout)");
}

/// The comparison can fail: a corrupted expectation is reported.
#[test]
fn corrupted_expectation_is_reported() {
    let case = root().join("load-balancer");
    let text = read(&case.join("flows.txt")).replacen("| DROP |", "| REJECT |", 1);
    let flows = parse_flows(&text).expect("flows");
    let payload = render(&case, &case.join("input.yaml"), "flat").expect("render");
    let rules = trace::parse(&payload).expect("parse");
    let failed: Vec<_> = flows
        .iter()
        .filter_map(|f| compare(&rules, f, &node_ips()))
        .collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert!(failed[0].contains("upstream output \"REJECT\""), "{}", failed[0]);
}

#[test]
fn flow_table_parses_protocols_and_rejects_bad_lines() {
    let flows = parse_flows("# c\nx | 10.0.0.2 | 172.30.0.42 | 53/udp | 10.0.0.1:53, 10.0.0.2:53 | false\n")
        .expect("parse");
    assert_eq!(flows.len(), 1);
    assert_eq!(flows[0].proto, Proto::Udp);
    assert_eq!(flows[0].output.len(), 2);
    assert!(parse_flows("x | 10.0.0.2 | 172.30.0.42 | 53 | | maybe\n").is_err());
    assert!(parse_flows("x | 10.0.0.2 | 53 | | false\n").is_err());
}

#[test]
fn uneven_endpoint_weights_are_reported() {
    let outcome = |p: f64, ep: &str| svcnet_proxy::offline::trace::Outcome {
        probability: p,
        verdict: Verdict::Dnat(ep.parse().expect("socket address")),
        masquerade: false,
        steps: Vec::new(),
        notes: Vec::new(),
    };
    let even = Trace {
        outcomes: vec![outcome(0.5, "10.0.0.1:80"), outcome(0.5, "10.0.0.2:80")],
        warnings: Vec::new(),
    };
    assert_eq!(uneven_endpoints(&even), None);
    let uneven = Trace {
        outcomes: vec![outcome(0.75, "10.0.0.1:80"), outcome(0.25, "10.0.0.2:80")],
        warnings: Vec::new(),
    };
    assert!(uneven_endpoints(&uneven).is_some());
}

/// One flow through the nftables mode's table in `layout` (`upstream` or `maps`), rendered with the
/// case's flags: (upstream terms, summary, warnings).
type NftResult = ((BTreeSet<String>, bool), Vec<(Verdict, bool, f64)>, Vec<String>);

fn nft_flow(case: &Path, input: &Path, layout: &str, flows: &[Flow]) -> Result<Vec<NftResult>, String> {
    let extra = ["--proxy-mode", "nftables", "--nftables-layout", layout];
    let text = common::render_with_flags_file(input, &case.join("flags"), &extra)?;
    let rules = trace::nft::parse(&text).map_err(|e| format!("parsing the {layout} table: {e}"))?;
    let node_ips = node_ips();
    Ok(flows
        .iter()
        .map(|flow| {
            let from_node = flow.src.is_loopback() || node_ips.contains(&flow.src);
            let opts = TraceOptions {
                node_ips: node_ips.clone(),
                hook: if from_node { Hook::Output } else { Hook::Prerouting },
            };
            let packet = Packet {
                src: flow.src,
                dst: flow.dst,
                dport: flow.port,
                proto: flow.proto,
                in_iface: None,
            };
            let t = trace::nft::trace(&rules, &packet, &opts);
            (upstream_terms(&t), t.summary(), t.warnings)
        })
        .collect())
}

/// Upstream's flows through both nftables layouts: the maps layout (issue 32) gives every flow the
/// upstream layout's outcome, with no tracer warning, and so meets upstream's expectation wherever
/// the upstream layout does (the flows were written for the iptables mode; where the nftables mode's
/// defaults differ, e.g. NodePorts only on the primary IP, both layouts differ alike).
#[test]
fn upstream_packet_flows_nftables_layouts_agree() {
    let (mut compared, mut as_upstream, mut failures) = (0, 0, Vec::new());
    for case in cases() {
        for (input, flows_file) in steps(&case) {
            let flows = parse_flows(&read(&flows_file)).expect("flows");
            let both = nft_flow(&case, &input, "upstream", &flows)
                .and_then(|u| Ok((u, nft_flow(&case, &input, "maps", &flows)?)));
            let (upstream, maps) = match both {
                Ok(both) => both,
                Err(e) => {
                    failures.push(format!("=== {}: {e}", input.display()));
                    continue;
                }
            };
            for ((flow, u), m) in flows.iter().zip(&upstream).zip(&maps) {
                compared += 1;
                let same = u.0 == m.0
                    && u.1.len() == m.1.len()
                    && u.1
                        .iter()
                        .zip(&m.1)
                        .all(|(a, b)| a.0 == b.0 && a.1 == b.1 && (a.2 - b.2).abs() < 1e-9);
                if !same || !m.2.is_empty() {
                    failures.push(format!(
                        "=== {} line {} {:?}: upstream layout {:?}, maps layout {:?} (warnings {:?})",
                        flows_file.display(),
                        flow.line,
                        flow.name,
                        u.1,
                        m.1,
                        m.2
                    ));
                }
                if m.0 == (flow.output.clone(), flow.masq) {
                    as_upstream += 1;
                }
            }
        }
    }
    assert!(compared > 100, "only {compared} flows");
    assert!(
        failures.is_empty(),
        "{} flows differ between the nftables layouts:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!(
        "{compared} flows: the maps layout agrees with the upstream layout on all; {as_upstream} meet upstream's (iptables-mode) expectation"
    );
}
