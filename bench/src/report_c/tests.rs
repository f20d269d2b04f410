use std::time::Duration;

use super::*;
use crate::p4::Mem;

fn case(services: usize, endpoints: usize, hwm_kb: u64, state: SyncState) -> P4Case {
    P4Case {
        services,
        endpoints,
        load: Duration::from_secs(1),
        to_sync: Duration::from_secs(2),
        state,
        caches: None,
        at_end: Mem {
            rss_kb: hwm_kb - 100,
            hwm_kb,
        },
        peak_rss_kb: hwm_kb,
        apiserver_rss_kb: 1000,
    }
}

#[test]
fn p4_verdict_uses_the_largest_case_and_says_when_the_sync_did_not_finish() {
    let out = p4(&[
        case(1000, 10, 20 * 1024, SyncState::Synced),
        case(10_000, 10, 80 * 1024, SyncState::TimedOut),
    ]);
    assert!(out.contains("VmHWM 80.0 MiB (target <= 64 MiB) MISSED"), "{out}");
    assert!(out.contains("NOT complete"), "{out}");
    // (80 - 20) MiB over 9000 services: 6827 KiB per 1000 services.
    assert!(out.contains("6827 KiB per 1000 services"), "{out}");
    let ok = p4(&[case(10_000, 10, 60 * 1024, SyncState::Synced)]);
    assert!(ok.contains("MET") && !ok.contains("NOT complete"), "{ok}");
}

#[test]
fn c2_prints_the_extrapolation_and_the_ratio() {
    let run = |label: &str, services, secs| C2Run {
        label: label.into(),
        services,
        elapsed: Duration::from_secs_f64(secs),
        calls: Counts::default(),
        log_truncated: false,
    };
    let r = C2 {
        nodes: 100,
        op_latency_ms: 1000,
        default: run("default", 1000, 400.0),
        serial: run("concurrency 1", 50, 400.0),
    };
    let out = c2(&r);
    assert!(out.contains("extrapolated x 1000 = 8000 s"), "{out}");
    assert!(out.contains("20.0x faster (target >= 20x) MET"), "{out}");
}

#[test]
fn c1_verdicts() {
    let c = |mutating| Counts {
        total: 20,
        mutating,
        ..Default::default()
    };
    let r = C1 {
        nodes: 3,
        op_latency_ms: 100,
        new_lb: c(9),
        new_lb_mutating: vec!["POST addresses".into()],
        noop: c(0),
        noop_mutating: vec![],
        create_to_ingress: Duration::from_secs(1),
        done_to_ingress_ms: Some(1200),
    };
    let out = c1(&r);
    assert!(out.contains("9 mutating calls (target <= 8) MISSED"), "{out}");
    assert!(out.contains("0 mutating calls (target 0) MET"), "{out}");
    assert!(out.contains("1200 ms (target <= 1000 ms) MISSED"), "{out}");
}
