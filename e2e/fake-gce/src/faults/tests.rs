use super::*;

fn spec(json: serde_json::Value) -> FaultSpec {
    serde_json::from_value(json).expect("valid spec")
}

#[test]
fn next_n_calls_fail_then_pass() {
    let mut f = Faults::default();
    f.add(spec(
        json!({"method": "POST", "pathRegex": "/firewalls$", "count": 2, "status": 503}),
    ))
    .expect("added");
    assert!(f.decide("GET", "/x/firewalls", false).error.is_none());
    let first = f.decide("POST", "/x/firewalls", true).error.expect("fails");
    assert_eq!((first.0.code, first.0.reason.as_str()), (503, "backendError"));
    assert!(f.decide("post", "/x/firewalls", true).error.is_some());
    assert!(f.decide("POST", "/x/firewalls", true).error.is_none());
}

#[test]
fn fraction_is_roughly_respected_and_reads_never_get_operation_mode() {
    let mut f = Faults::default();
    f.add(spec(
        json!({"fraction": 0.3, "reason": "quotaExceeded", "mode": "operation", "seed": 42}),
    ))
    .expect("added");
    let mut failed = 0;
    for _ in 0..1000 {
        if let Some((e, mode)) = f.decide("GET", "/p", false).error {
            assert_eq!((e.code, mode), (403, FaultMode::Http));
            failed += 1;
        }
    }
    assert!((200..400).contains(&failed), "{failed}");
    let (_, mode) = loop {
        if let Some(x) = f.decide("POST", "/p", true).error {
            break x;
        }
    };
    assert_eq!(mode, FaultMode::Operation);
}

#[test]
fn delay_only_and_validation() {
    let mut f = Faults::default();
    f.add(spec(json!({"delayMs": 30}))).expect("added");
    let d = f.decide("GET", "/p", false);
    assert_eq!((d.delay_ms, d.error.is_none()), (30, true));
    assert!(f.add(spec(json!({"pathRegex": "("}))).is_err());
    assert!(f.add(spec(json!({"fraction": 2.0}))).is_err());
}

#[test]
fn rate_limit_windows() {
    let mut r = RateLimit::default();
    assert!(r.admit(0));
    r.set(Some(2));
    assert!(r.admit(10_000));
    assert!(r.admit(10_100));
    assert!(!r.admit(10_200));
    assert!(r.admit(11_001));
}
