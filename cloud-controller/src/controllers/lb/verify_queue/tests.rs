//! Slot order, spacing, and changed Services jumping the queue.

use std::time::{Duration, Instant};

use super::{VerifyQueue, verify_interval};

#[test]
fn interval_follows_the_read_quota_share() {
    // 8 GETs per verification at 75% of 20 reads/s: one every 0.53 s.
    let i = verify_interval(20.0);
    assert!((i.as_secs_f64() - 8.0 / 15.0).abs() < 1e-9, "{i:?}");
    assert_eq!(verify_interval(0.0), Duration::ZERO);
    assert!(verify_interval(40.0) < i);
}

#[test]
fn converged_services_get_spaced_slots_in_first_seen_order() {
    let t0 = Instant::now();
    let step = Duration::from_millis(500);
    let mut q = VerifyQueue::new(step);
    let waits: Vec<Duration> = (0..4)
        .map(|i| q.wait(&format!("ns/s{i}"), "1", t0).expect("held back"))
        .collect();
    assert_eq!(waits, [step, step * 2, step * 3, step * 4]);
    assert_eq!(q.pending(), 4);
    // Asked again before its slot: the remaining time, the same slot.
    assert_eq!(q.wait("ns/s2", "1", t0 + step), Some(step * 2));
    // At its slot: verify now, and it leaves the queue.
    assert_eq!(q.wait("ns/s0", "1", t0 + step), None);
    assert_eq!(q.pending(), 3);
}

#[test]
fn a_changed_service_is_synced_at_once() {
    let t0 = Instant::now();
    let mut q = VerifyQueue::new(Duration::from_secs(1));
    for i in 0..100 {
        q.wait(&format!("ns/s{i}"), "7", t0);
    }
    assert_eq!(
        q.wait("ns/s99", "8", t0),
        None,
        "new resourceVersion: not held back"
    );
    q.forget("ns/s50");
    assert_eq!(q.pending(), 98);
    // A late newcomer queues behind the last slot, not at the front.
    let late = q.wait("ns/late", "1", t0).expect("held back");
    assert_eq!(late, Duration::from_secs(101));
}

#[test]
fn unlimited_reads_hold_nothing_back() {
    let mut q = VerifyQueue::new(Duration::ZERO);
    assert_eq!(q.wait("ns/a", "1", Instant::now()), None);
    assert_eq!(q.pending(), 0);
}
