use std::time::Duration;

use super::*;
use crate::p1::P1Case;
use crate::p2::P2Layout;

fn case(layout: Layout, services: usize, us: f64) -> P1Case {
    P1Case {
        layout: crate::p1::Rules::Iptables(layout),
        services,
        endpoints: 1,
        counts: 1,
        walked: services,
        payload_lines: 0,
        render: Duration::ZERO,
        restore: Duration::ZERO,
        chunks: 1,
        samples_us: vec![us; 3],
    }
}

#[test]
fn p1_ratios_and_verdicts() {
    let r = P1 {
        cases: vec![
            case(Layout::Flat, 10, 10.0),
            case(Layout::Tree, 10, 10.0),
            case(Layout::Flat, 100, 100.0),
            case(Layout::Tree, 100, 12.0),
        ],
    };
    let text = p1(&r);
    assert!(
        text.contains("tree@100 / tree@10: 1.20x (target <= 1.3x) MET"),
        "{text}"
    );
    assert!(text.contains("flat@100 / flat@10: 10.00x"), "{text}");
    assert!(text.contains("flat@100 / tree@100: 8.33x"), "{text}");
    let mut many = case(Layout::Tree, 10, 25.0);
    many.endpoints = 1000;
    let with_eps = P1 {
        cases: vec![case(Layout::Tree, 10, 10.0), many],
    };
    assert!(
        p1(&with_eps).contains("1000-endpoint service / 1-endpoint service: 2.50x (target <= 1.3x) MISSED"),
        "{}",
        p1(&with_eps)
    );
    let slow = P1 {
        cases: vec![case(Layout::Tree, 10, 10.0), case(Layout::Tree, 100, 14.0)],
    };
    assert!(p1(&slow).contains("1.40x (target <= 1.3x) MISSED"));
}

#[test]
fn p1_maps_growth_and_spread_compare_with_the_same_probe_at_the_smallest_size() {
    let maps = |services: usize, endpoints: usize, counts: usize, walked: usize, us: f64| P1Case {
        layout: crate::p1::Rules::Maps,
        endpoints,
        counts,
        walked,
        ..case(Layout::Tree, services, us)
    };
    let r = P1 {
        cases: vec![
            maps(10, 1, 1, 3, 10.0),
            maps(100, 1, 1, 3, 10.5),
            maps(10, 500, 2, 4, 12.0),
            maps(100, 500, 500, 502, 24.0),
        ],
    };
    let text = p1(&r);
    assert!(
        text.contains("maps@100 / maps@10: 1.05x (target <= 1.1x) MET"),
        "{text}"
    );
    assert!(
        text.contains(
            "maps, 500 distinct endpoint counts (probe walks 502 rules): maps@100 / maps@10, 500-endpoint probe: 2.00x (target <= 1.1x) MISSED"
        ),
        "{text}"
    );
    // The spread row's "vs smallest" is against the same probe at 10 services, not the 1-endpoint one.
    let row = text
        .lines()
        .find(|l| l.contains("maps") && l.contains(" 502 "))
        .unwrap_or_default();
    assert!(row.contains("2.00x") && row.ends_with(" 500"), "{row}");
    assert!(!text.contains("stretch: 500-endpoint"), "{text}");
    // A maps-only run (`--p1-maps-only`) has no iptables rows, so no verdict on them either.
    assert!(
        !text.contains("tree@") && !text.contains("flat@") && !text.contains("means:"),
        "{text}"
    );
}

fn sync(lines: usize, total_ms: u64) -> Sync {
    Sync {
        render: Duration::from_millis(total_ms),
        lines,
        ..Default::default()
    }
}

#[test]
fn p2_reports_partial_lines_time_and_full_ratio() {
    let r = P2 {
        services: 10,
        endpoints: 100,
        layouts: vec![P2Layout {
            name: "tree".to_string(),
            full_lines: 5000,
            initial_load: Duration::ZERO,
            initial_chunks: 1,
            endpoint_change: vec![sync(40, 10), sync(42, 30), sync(41, 20)],
            service_added: vec![sync(60, 40), sync(60, 40), sync(60, 40)],
            new_count: vec![],
            affinity_added: vec![],
            full: Some(sync(5000, 4000)),
        }],
    };
    let text = p2(&r);
    let mut killed = r;
    if let Some(f) = killed.layouts[0].full.as_mut() {
        f.killed = true;
    }
    assert!(
        p2(&killed).contains("full sync / partial: >100.00x"),
        "{}",
        p2(&killed)
    );
    assert!(
        text.contains(
            "tree: partial 60 of 5000 lines, 40.0 ms (target <= 50 ms) MET; full sync / partial: 100.00x"
        ),
        "{text}"
    );
}

#[test]
fn p3_share_verdict() {
    let rows = [
        P3Row {
            what: "a".into(),
            render: Duration::from_millis(4),
            restore: Duration::from_millis(100),
            killed: false,
        },
        P3Row {
            what: "b".into(),
            render: Duration::from_millis(6),
            restore: Duration::from_millis(100),
            killed: false,
        },
        P3Row {
            what: "c".into(),
            render: Duration::from_millis(6),
            restore: Duration::from_millis(300),
            killed: true,
        },
        P3Row {
            what: "d".into(),
            render: Duration::from_millis(30),
            restore: Duration::from_millis(300),
            killed: true,
        },
    ];
    let text = p3(&rows);
    assert!(text.contains("4.0% MET"), "{text}");
    assert!(text.contains("6.0% MISSED"), "{text}");
    assert!(text.contains(">300.0    <2.0% MET"), "{text}");
    assert!(text.contains("<10.0% UNKNOWN"), "{text}");
}
