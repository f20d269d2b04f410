//! `svcnet-bench --quick` end to end: every part runs against the real iptables tools in throwaway
//! namespaces and the real svcnet binaries, and prints its table. No timing is asserted; figures
//! that must hold regardless of timing (rules walked, partial payload size, GCE call counts, the
//! proxy's first sync) are.

use std::process::{Command, Stdio};

/// Whether network namespaces can be made here (svcnet-netns' skip rule: otherwise SKIPPED, or a
/// panic under CI).
fn netns_available() -> bool {
    svcnet_netns::netns_or_skip("bench-probe").is_some()
}

fn field(line: &str, i: usize) -> &str {
    line.split_whitespace().nth(i).unwrap_or_default()
}

#[test]
fn quick_run_prints_every_part_and_leaves_no_namespace() {
    if !netns_available() {
        return;
    }
    // U runs in its own test below (it needs only the proxy, and runs once).
    let child = Command::new(env!("CARGO_BIN_EXE_svcnet-bench"))
        .args(["--quick", "--only", "p1,p2,p4,c1,c2,c3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run svcnet-bench");
    let pid = child.id();
    let out = child.wait_with_output().expect("wait svcnet-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed:\n{stdout}\n{stderr}");
    for part in ["\nP1 ", "\nP2 ", "\nP3 ", "\nP4 ", "\nC1 ", "\nC2 ", "\nC3 "] {
        assert!(stdout.contains(part), "missing {part:?}:\n{stdout}");
    }
    // P1: the flat walk to the last of 300 services is 300 rules; the tree's is far shorter.
    let row = |layout: &str, n: &str| {
        stdout
            .lines()
            .find(|l| field(l, 0) == layout && field(l, 1) == n)
            .unwrap_or_else(|| panic!("no {layout} {n} row:\n{stdout}"))
            .to_string()
    };
    assert_eq!(field(&row("flat", "300"), 3), "300");
    let tree_walk: usize = field(&row("tree", "300"), 3).parse().unwrap();
    assert!(tree_walk < 40, "tree walk {tree_walk}");
    // The nftables mode's probe is one verdict-map lookup at any size, and it connected.
    assert_eq!(field(&row("nft", "300"), 3), "1");
    // The maps layout's probe walks its marks and one dispatch rule per distinct endpoint count
    // up to its own (the largest): the spread case (5 counts) 4 more than the 1-endpoint service,
    // the same 5-endpoint probe among 1-endpoint services (2 counts) 1 more; each connected.
    let maps = |n: &str, eps: &str| {
        stdout
            .lines()
            .find(|l| field(l, 0) == "maps" && field(l, 1) == n && field(l, 2) == eps)
            .unwrap_or_else(|| {
                panic!(
                    "no maps {n} x {eps} row:
{stdout}"
                )
            })
            .to_string()
    };
    let walk = |l: &str| field(l, 3).parse::<usize>().unwrap();
    let (one, spread, base) = (maps("300", "1"), maps("300", "5"), maps("10", "5"));
    assert_eq!(walk(&spread), walk(&one) + 4, "{one}\n{spread}");
    assert_eq!(walk(&base), walk(&one) + 1, "{one}\n{base}");
    assert_eq!(field(&spread, 9), "5", "{spread}");
    assert!(
        stdout.contains("maps, 5 distinct endpoint counts (probe walks "),
        "{stdout}"
    );
    // P2: a partial sync writes a small fraction of the full payload.
    let partial = stdout
        .lines()
        .find(|l| field(l, 0) == "tree" && l.contains("endpoint replaced"))
        .unwrap_or_else(|| panic!("no P2 tree row:\n{stdout}"));
    let lines: f64 = field(partial, 3).parse().unwrap();
    let full: f64 = field(partial, 4).parse().unwrap();
    assert!(
        lines > 0.0 && lines * 20.0 < full,
        "partial {lines} vs full {full}"
    );
    // P2: the nftables mode's netlink writer ran beside nft -f, and wrote small transactions too.
    for writer in ["nftnl", "nft"] {
        let row = stdout
            .lines()
            .find(|l| field(l, 0) == writer && l.contains("endpoint replaced"))
            .unwrap_or_else(|| panic!("no P2 {writer} row:\n{stdout}"));
        let lines: f64 = field(row, 3).parse().unwrap();
        let full: f64 = field(row, 4).parse().unwrap();
        assert!(lines > 0.0 && lines * 20.0 < full, "{row}");
    }
    // C1: a new LB is created by 7 mutating calls (address, 2 firewalls, health check, pool,
    // forwarding rule, address release; budget 8); a no-op resync reads but never writes.
    let c1 = |what: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(what))
            .unwrap_or_else(|| panic!("no C1 {what} row:\n{stdout}"))
            .to_string()
    };
    let new_lb = c1("new LB  ");
    let mutating: usize = field(&new_lb, 3).parse().unwrap();
    assert!((7..=8).contains(&mutating), "{new_lb}");
    let noop = c1("no-op resync  ");
    assert_eq!(field(&noop, 3), "0", "{noop}");
    assert!(
        field(&noop, 2).parse::<usize>().unwrap() > 0,
        "the resync made no GCE call: {noop}"
    );
    // C2: both runs happened and the serial one is reported as an extrapolation.
    assert!(
        stdout.contains("concurrency 1 was measured on 3 Services and is serial"),
        "{stdout}"
    );
    // C3: the new Service was built after the restart (its mutating calls are in the row) and
    // its time is reported against the target.
    let restart = c1("restart -> new IP");
    assert!(
        field(&restart, 5).parse::<usize>().unwrap() >= 5,
        "the new LB's calls: {restart}"
    );
    assert!(stdout.contains("new Service's IP "), "{stdout}");
    // P4: the proxy finished its first sync at the larger quick size and its memory was read.
    let p4 = stdout
        .lines()
        .find(|l| field(l, 0) == "200" && field(l, 1) == "1000")
        .unwrap_or_else(|| panic!("no P4 200-service row:\n{stdout}"));
    assert!(p4.ends_with("done"), "first sync not done: {p4}");
    assert!(field(p4, 7).parse::<f64>().unwrap() > 1.0, "VmHWM: {p4}");
    assert!(
        field(p4, 4).parse::<f64>().is_ok(),
        "caches not seen loaded: {p4}"
    );
    // Every namespace this run created (named after its pid) is gone.
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let names = String::from_utf8_lossy(&list.stdout);
    let mine = format!("svcnet-bench-{pid}-");
    assert!(
        !names.lines().any(|l| l.starts_with(&mine)),
        "leftover namespaces:\n{names}"
    );
}

#[test]
fn a_full_sync_past_its_limit_is_killed_and_reported_as_a_lower_bound() {
    if !netns_available() {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_svcnet-bench"))
        .args(["--quick", "--only", "p2", "--full-sync-limit-s", "0"])
        .output()
        .expect("run svcnet-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let full = stdout
        .lines()
        .find(|l| field(l, 0) == "tree" && l.contains("FULL sync"))
        .unwrap_or_else(|| panic!("no full sync row:\n{stdout}"));
    assert!(
        field(full, 8).starts_with('>'),
        "restore not marked killed: {full}"
    );
    assert!(stdout.contains("full sync / partial: >"), "{stdout}");
    assert!(!stdout.contains("\nP1 "), "--only p2 ran P1:\n{stdout}");
}

#[test]
fn quick_upstream_anchor_runs_all_five_proxies_on_one_state() {
    if !netns_available() {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_svcnet-bench"))
        .args(["--quick", "--only", "u"])
        .output()
        .expect("run svcnet-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_upstream_anchor(&stdout);
    assert!(!stdout.contains("\nP1 "), "--only u ran P1:\n{stdout}");
}

/// U: all five proxies (kube-proxy iptables and nftables, svcnet tree, flat and nftables) synced the
/// same state and made every timed change live; each svcnet figure has a ratio to each upstream mode.
fn check_upstream_anchor(stdout: &str) {
    let u = stdout
        .split("\nU ")
        .nth(1)
        .unwrap_or_else(|| panic!("no U part:\n{stdout}"));
    let row = |label: &str| -> Vec<String> {
        let line = u
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no U {label:?} row:\n{u}"));
        line[4 + 36..].split_whitespace().map(str::to_owned).collect()
    };
    for label in [
        "full sync from start",
        "VmHWM after full sync",
        "endpoint replaced -> live p50",
        "Service added -> live p50",
        "first packet (connect) p50",
        "CPU s per 1000 endpoint changes",
    ] {
        let cells = row(label);
        assert_eq!(cells.len(), 5 + 6, "{label}: 5 proxies and 6 ratios: {cells:?}");
        for v in &cells[..5] {
            assert!(v.parse::<f64>().is_ok_and(|v| v > 0.0), "{label}: {cells:?}");
        }
        for r in &cells[5..] {
            assert!(r.ends_with('x'), "{label}: ratio {r}");
        }
    }
    for name in [
        "kube-proxy iptables",
        "kube-proxy nftables",
        "svcnet tree",
        "svcnet flat",
        "svcnet nft",
    ] {
        assert!(!u.contains(&format!("    {name}: ")), "{name} failed:\n{u}");
    }
}

/// `--p2-endpoints` is per Service: a total passed in its place (10k x 100k) is refused at once
/// instead of filling the machine's memory (a bench that starts anyway is killed after 10 s).
#[test]
fn a_p2_size_past_the_limit_is_refused_before_anything_runs() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_svcnet-bench"))
        .args([
            "--only",
            "p2",
            "--p2-services",
            "10000",
            "--p2-endpoints",
            "100000",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run svcnet-bench");
    let start = std::time::Instant::now();
    while child.try_wait().expect("wait svcnet-bench").is_none() {
        if start.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("svcnet-bench started a P2 of 1,000,000,000 endpoints instead of refusing it");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("wait svcnet-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("--p2-services 10000 x --p2-endpoints 100000"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing may run first");
}
