use super::*;
use std::time::Duration;

fn row(name: &str, sync_s: f64, hwm_mib: u64, replace: &[f64]) -> URow {
    URow {
        name: name.into(),
        full_sync: Some(Duration::from_secs_f64(sync_s)),
        hwm_sync_kb: hwm_mib * 1024,
        hwm_end_kb: hwm_mib * 1024,
        replace_ms: replace.to_vec(),
        add_ms: replace.to_vec(),
        connect_us: vec![50.0],
        cpu_per_1000: Some(2.0),
        ..URow::default()
    }
}

fn result(rows: Vec<URow>) -> UResult {
    UResult {
        services: 10_000,
        endpoints: 10,
        iptables: crate::upstream::Backend::Nft,
        load: Duration::from_secs(60),
        rows,
    }
}

#[test]
fn svcnet_columns_are_ratios_to_each_upstream_mode() {
    let r = result(vec![
        row("kube-proxy iptables", 20.0, 100, &[800.0]),
        row("kube-proxy nftables", 10.0, 200, &[400.0]),
        row("svcnet tree", 5.0, 50, &[200.0]),
    ]);
    let text = u(&r);
    let head = text.lines().nth(2).expect("header");
    assert!(
        head.contains("tree/kp-ipt") && head.contains("tree/kp-nft"),
        "{head}"
    );
    let sync = text.lines().find(|l| l.contains("full sync")).expect("sync row");
    // 5/20 and 5/10.
    assert!(sync.contains("0.25x") && sync.contains("0.50x"), "{sync}");
    let hwm = text
        .lines()
        .find(|l| l.contains("after full sync"))
        .expect("hwm row");
    assert!(hwm.contains("0.50x") && hwm.contains("0.25x"), "{hwm}");
}

#[test]
fn missing_figures_and_errors_are_shown_not_invented() {
    let mut failed = URow {
        name: "kube-proxy nftables".into(),
        error: Some("nft: not supported\nmore".into()),
        ..URow::default()
    };
    failed.cpu_per_1000 = None;
    let r = result(vec![
        row("kube-proxy iptables", 20.0, 100, &[800.0]),
        failed,
        row("svcnet flat", 30.0, 60, &[]),
    ]);
    let text = u(&r);
    let lat = text
        .lines()
        .find(|l| l.contains("replaced -> live p50"))
        .expect("latency row");
    // svcnet flat has no sample: "-" in its column and "n/a" as its ratios.
    assert!(lat.contains(" - ") && lat.contains("n/a"), "{lat}");
    assert!(text.contains("kube-proxy nftables: nft: not supported"), "{text}");
    assert!(!text.contains("more"), "only the first line of an error");
}

#[test]
fn an_unfinished_upstream_sync_is_a_lower_bound_and_bounds_the_ratio() {
    let stuck = URow {
        name: "kube-proxy iptables".into(),
        full_sync_over: Some(Duration::from_secs(900)),
        error: Some("not live after 900 s".into()),
        ..URow::default()
    };
    let r = result(vec![stuck, row("svcnet tree", 9.0, 60, &[300.0])]);
    let text = u(&r);
    let sync = text.lines().find(|l| l.contains("full sync")).expect("sync row");
    // 9 s against more than 900 s: less than 0.01x.
    assert!(sync.contains(">900") && sync.contains("<0.01x"), "{sync}");
    let lat = text
        .lines()
        .find(|l| l.contains("replaced -> live p50"))
        .expect("latency row");
    assert!(lat.contains("n/a"), "{lat}");
}
