use std::time::Duration;

use super::*;

fn run(services: usize, secs: f64) -> C2Run {
    C2Run {
        label: "x".into(),
        services,
        elapsed: Duration::from_secs_f64(secs),
        calls: Counts::default(),
        log_truncated: false,
    }
}

#[test]
fn serial_time_is_extrapolated_per_service() {
    // 50 Services in 400 s: 8 s each, 8000 s for 1000.
    let serial = run(50, 400.0);
    assert!((per_service(&serial) - 8.0).abs() < 1e-9);
    assert!((extrapolate(&serial, 1000) - 8000.0).abs() < 1e-6);
}

#[test]
fn speedup_compares_equal_service_counts() {
    let serial = run(50, 400.0);
    let parallel = run(1000, 250.0);
    assert!((speedup(&serial, &parallel) - 32.0).abs() < 1e-9);
    let c2 = C2 {
        nodes: 100,
        op_latency_ms: 1000,
        default: parallel,
        serial,
    };
    assert!((c2.speedup() - 32.0).abs() < 1e-9);
    assert!((c2.serial_extrapolated() - 8000.0).abs() < 1e-6);
}

#[test]
fn zero_services_or_time_is_not_a_ratio() {
    assert!(per_service(&run(0, 1.0)).is_nan());
    assert!(speedup(&run(10, 10.0), &run(100, 0.0)).is_nan());
}
