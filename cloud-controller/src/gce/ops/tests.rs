use google_cloud_compute_v1::model::Operation;
use google_cloud_compute_v1::model::operation::Status;

use super::check_done;

fn op(v: serde_json::Value) -> Operation {
    serde_json::from_value(v).expect("operation json")
}

#[test]
fn done_without_error_is_ok() {
    assert!(check_done("c", &op(serde_json::json!({"name": "op1", "status": "DONE"}))).is_ok());
}

#[test]
fn done_with_error_is_a_failure_even_though_the_poller_said_ok() {
    let o = op(serde_json::json!({
        "name": "op1", "status": "DONE", "httpErrorStatusCode": 503, "httpErrorMessage": "SERVICE UNAVAILABLE",
        "error": {"errors": [{"code": "backendError", "message": "injected"}]}
    }));
    assert_eq!(o.status, Some(Status::Done));
    let e = check_done("create_firewall x", &o).expect_err("failed operation");
    assert!(e.from_operation);
    assert_eq!(e.status, Some(503));
    assert_eq!(e.reason.as_deref(), Some("backendError"));
    assert_eq!(e.message, "injected");
    assert!(e.is_retryable());
}

#[test]
fn running_operation_is_not_done() {
    let e =
        check_done("c", &op(serde_json::json!({"name": "op1", "status": "RUNNING"}))).expect_err("not done");
    assert!(e.message.contains("did not finish"), "{e}");
}

// --- the polling loop (`await_operation`), driven through the client's discovery poller ---

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use google_cloud_gax::exponential_backoff::ExponentialBackoff;
use google_cloud_gax::polling_error_policy::AlwaysContinue;
use google_cloud_lro::Poller;
use tokio::time::Instant;

use super::await_operation;
use crate::gce::ratelimit::PollPacing;
use crate::gce::ratelimit::RateLimiter;

const PACING: PollPacing = PollPacing {
    initial: Duration::from_millis(200),
    max: Duration::from_secs(1),
};
const TIMEOUT: Duration = Duration::from_secs(300);

/// A poller like the client's: the start call answers `start`, then the n-th operation GET
/// (n = 1, 2, ...) answers `query(n)`; the time of every GET goes to `log`.
fn poller(
    start: serde_json::Value,
    query: impl Fn(usize) -> serde_json::Value + Send + Sync + 'static,
    log: Arc<Mutex<Vec<Instant>>>,
) -> impl Poller<Operation, Operation> {
    let query = Arc::new(query);
    let count = Arc::new(AtomicUsize::new(0));
    google_cloud_lro::internal::new_discovery_poller(
        Arc::new(AlwaysContinue),
        Arc::new(ExponentialBackoff::default()),
        move || async move { Ok(op(start)) },
        move |_name: String| {
            log.lock().expect("log").push(Instant::now());
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            let answer = op(query(n));
            async move { Ok(answer) }
        },
    )
}

fn running() -> serde_json::Value {
    serde_json::json!({"name": "op1", "status": "RUNNING"})
}

fn done() -> serde_json::Value {
    serde_json::json!({"name": "op1", "status": "DONE"})
}

#[tokio::test(start_paused = true)]
async fn polls_pause_from_the_initial_delay_doubling_to_the_maximum() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let p = poller(running(), |n| if n < 6 { running() } else { done() }, log.clone());
    let start = Instant::now();
    let got = await_operation(&RateLimiter::unlimited(), PACING, TIMEOUT, "c", p).await;
    assert!(got.is_ok(), "{got:?}");
    let at: Vec<u128> = log
        .lock()
        .expect("log")
        .iter()
        .map(|t| (*t - start).as_millis())
        .collect();
    // Pauses 200, 400, 800, then capped at 1000.
    assert_eq!(at, vec![200, 600, 1400, 2400, 3400, 4400]);
}

#[tokio::test(start_paused = true)]
async fn concurrent_waits_never_exceed_the_operations_bucket() {
    const QPS: f64 = 10.0;
    const BURST: u32 = 2;
    const OPS: usize = 30;
    const POLLS: usize = 4;
    let limiter = RateLimiter::new(QPS, BURST);
    let log = Arc::new(Mutex::new(Vec::new()));
    let waits = (0..OPS).map(|i| {
        let p = poller(
            running(),
            |n| if n < POLLS { running() } else { done() },
            log.clone(),
        );
        let limiter = &limiter;
        async move { await_operation(limiter, PACING, TIMEOUT, &format!("c{i}"), p).await }
    });
    for got in futures::future::join_all(waits).await {
        assert!(got.is_ok(), "{got:?}");
    }
    let mut at = log.lock().expect("log").clone();
    at.sort();
    assert_eq!(at.len(), OPS * POLLS, "every operation polled until DONE");
    // A token bucket admits at most burst + qps * T calls in any window of length T.
    for (i, first) in at.iter().enumerate() {
        for (j, last) in at.iter().enumerate().skip(i) {
            let window = (*last - *first).as_secs_f64();
            let allowed = f64::from(BURST) + QPS * window + 1e-6;
            assert!(
                (j - i + 1) as f64 <= allowed,
                "{} polls within {window}s (at most {allowed})",
                j - i + 1
            );
        }
    }
    // Unlimited, all 30 first polls would come at 200 ms; limited they take ~3 s per round.
    let span = (at[at.len() - 1] - at[0]).as_secs_f64();
    assert!(
        span >= (OPS * POLLS - BURST as usize) as f64 / QPS - 0.01,
        "{span}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_call_itself_takes_no_operations_token() {
    // One token per ~17 minutes: any operations token after the first would stall the test.
    let limiter = RateLimiter::new(0.001, 1);
    let log = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    for _ in 0..5 {
        let p = poller(done(), |_| done(), log.clone());
        let got = await_operation(&limiter, PACING, TIMEOUT, "c", p).await;
        assert!(got.is_ok(), "{got:?}");
    }
    assert!(log.lock().expect("log").is_empty(), "done at once: no poll");
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn operation_done_with_error_maps_to_the_same_error_as_before() {
    let failed = serde_json::json!({
        "name": "op1", "status": "DONE", "httpErrorStatusCode": 503, "httpErrorMessage": "SERVICE UNAVAILABLE",
        "error": {"errors": [{"code": "backendError", "message": "injected"}]}
    });
    let expected = check_done("create_firewall x", &op(failed.clone())).expect_err("failed operation");
    let answer = failed.clone();
    let p = poller(
        running(),
        move |n| if n < 2 { running() } else { answer.clone() },
        Arc::default(),
    );
    let limiter = RateLimiter::new(10.0, 1);
    let e = await_operation(&limiter, PACING, TIMEOUT, "create_firewall x", p)
        .await
        .expect_err("failed operation");
    assert_eq!(e, expected);
    assert!(e.from_operation && e.is_retryable());
    assert_eq!(e.status, Some(503));
    assert_eq!(e.reason.as_deref(), Some("backendError"));
    // Failed at once (DONE in the call's answer) is the same error.
    let p = poller(failed, |_| done(), Arc::default());
    let e = await_operation(&limiter, PACING, TIMEOUT, "create_firewall x", p)
        .await
        .expect_err("failed operation");
    assert_eq!(e, expected);
}

#[tokio::test(start_paused = true)]
async fn an_operation_that_never_ends_times_out_as_a_transport_error() {
    let p = poller(running(), |_| running(), Arc::default());
    let limiter = RateLimiter::new(10.0, 1);
    let e = await_operation(&limiter, PACING, Duration::from_secs(30), "c", p)
        .await
        .expect_err("timeout");
    assert!(e.transport && e.is_retryable(), "{e:?}");
    assert!(e.message.contains("no result within"), "{e}");
}
