use super::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug, PartialEq)]
enum TestError {
    Transient,
    Fatal,
}

impl std::fmt::Display for TestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

fn is_transient(err: &TestError) -> bool {
    *err == TestError::Transient
}

// Paused time: backoff sleeps complete instantly, so the real 200 ms+ delays cost nothing.
#[tokio::test(start_paused = true)]
async fn retryable_error_is_retried_until_success() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let result = retry(
        move || {
            let counter = Arc::clone(&counter);
            async move {
                let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                if n < 3 { Err(TestError::Transient) } else { Ok(n) }
            }
        },
        is_transient,
    )
    .await;
    assert_eq!(result, Ok(3));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn non_retryable_error_is_returned_at_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let result: Result<(), TestError> = retry(
        move || {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Err(TestError::Fatal)
            }
        },
        is_transient,
    )
    .await;
    assert_eq!(result, Err(TestError::Fatal));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn retries_stop_after_max_times() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let result: Result<(), TestError> = retry_with(
        backoff().with_max_times(2),
        move || {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Err(TestError::Transient)
            }
        },
        is_transient,
    )
    .await;
    assert_eq!(result, Err(TestError::Transient));
    assert_eq!(calls.load(Ordering::SeqCst), 3, "first attempt + 2 retries");
}
