use std::time::{Duration, Instant};

use serde_json::json;

use super::Checker;

/// Probes of one member by `hc`, half a second apart (the agent's tick).
struct Probes<'a> {
    c: &'a mut Checker,
    hc: serde_json::Value,
    ip: &'static str,
    at: Instant,
}

impl Probes<'_> {
    fn probe(&mut self, passed: bool) -> bool {
        let healthy = self.c.observe(self.ip, &self.hc, passed, self.at);
        self.at += Duration::from_millis(500);
        healthy
    }

    /// Failing probes for `secs` seconds; whether the member was healthy after each.
    fn fail_for(&mut self, secs: u64) -> Vec<bool> {
        (0..secs * 2).map(|_| self.probe(false)).collect()
    }
}

fn probes<'a>(c: &'a mut Checker, hc: serde_json::Value, ip: &'static str) -> Probes<'a> {
    Probes {
        c,
        hc,
        ip,
        at: Instant::now(),
    }
}

#[test]
fn a_new_member_takes_its_first_probe_and_recovers_at_the_healthy_threshold() {
    let hc =
        json!({"name": "k8s-x-node", "checkIntervalSec": 8, "healthyThreshold": 1, "unhealthyThreshold": 3});
    let mut c = Checker::default();
    let mut p = probes(&mut c, hc, "10.128.0.2");
    assert!(!p.probe(false), "first probe decides");
    assert!(p.probe(true), "healthyThreshold 1: one pass");
}

#[test]
fn failures_must_last_as_long_as_gce_needs_to_see_them() {
    // GCE probes the nodes' check every 8 s: 3 failures take at least 16 s.
    let hc =
        json!({"name": "k8s-x-node", "checkIntervalSec": 8, "healthyThreshold": 1, "unhealthyThreshold": 3});
    let mut c = Checker::default();
    let mut p = probes(&mut c, hc, "10.128.0.2");
    assert!(p.probe(true));
    // A proxy restart: 3 s of failures (6 probes, twice the threshold's count) change nothing.
    assert!(p.fail_for(3).iter().all(|h| *h), "a 3 s outage pulled the member");
    assert!(p.probe(true), "a pass resets the failures");
    let seen = p.fail_for(20);
    let first_out = seen.iter().position(|h| !*h);
    // 16 s after the first failure: its 33rd probe (index 32).
    assert_eq!(first_out, Some(32), "{seen:?}");
    assert!(seen[32..].iter().all(|h| !*h), "stays unhealthy while it fails");
}

#[test]
fn a_short_interval_still_needs_the_thresholds_count() {
    // The RBS local check: 3 s x 2. Two failures 3 s apart, not one.
    let hc = json!({"name": "k8s-x-local", "checkIntervalSec": 3, "unhealthyThreshold": 2});
    let mut c = Checker::default();
    let mut p = probes(&mut c, hc, "10.128.0.2");
    assert!(p.probe(true));
    let seen = p.fail_for(5);
    assert_eq!(seen.iter().position(|h| !*h), Some(6), "{seen:?}");
    // Recovery: healthyThreshold defaults to 2, so two passes spanning one interval (3 s).
    let back: Vec<bool> = (0..10).map(|_| p.probe(true)).collect();
    assert_eq!(back.iter().position(|h| *h), Some(6), "{back:?}");
}

#[test]
fn members_are_per_check() {
    let a = json!({"name": "a", "checkIntervalSec": 1});
    let b = json!({"name": "b", "checkIntervalSec": 1});
    let mut c = Checker::default();
    let now = Instant::now();
    assert!(!c.observe("10.128.0.3", &a, false, now));
    assert!(
        c.observe("10.128.0.3", &b, true, now),
        "another check, another member"
    );
}

#[test]
fn forgotten_members_start_over() {
    let hc = json!({"name": "a", "unhealthyThreshold": 5});
    let mut c = Checker::default();
    let now = Instant::now();
    assert!(c.observe("10.128.0.4", &hc, true, now));
    c.retain(&[]);
    assert!(
        !c.observe("10.128.0.4", &hc, false, now),
        "first probe decides again"
    );
}
