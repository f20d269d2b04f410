//! Retrying fallible async operations with exponential backoff and jitter.

use backon::{ExponentialBuilder, Retryable};
use std::future::Future;
use std::time::Duration;

/// First retry delay.
pub const MIN_DELAY: Duration = Duration::from_millis(200);
/// Longest delay between two attempts.
pub const MAX_DELAY: Duration = Duration::from_secs(30);
/// Retries (not counting the first attempt) that [`backoff`] allows.
pub const DEFAULT_MAX_TIMES: usize = 8;

/// Exponential backoff from 200 ms up to 30 s, with jitter, [`DEFAULT_MAX_TIMES`] retries.
/// Change the count with `.with_max_times(n)`.
pub fn backoff() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(MIN_DELAY)
        .with_max_delay(MAX_DELAY)
        .with_jitter()
        .with_max_times(DEFAULT_MAX_TIMES)
}

/// Runs `op` until it succeeds, fails with an error `retryable` rejects, or [`backoff`] runs out.
pub async fn retry<T, E, F, Fut>(op: F, retryable: impl Fn(&E) -> bool) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    retry_with(backoff(), op, retryable).await
}

/// Like [`retry`] with an explicit backoff policy.
pub async fn retry_with<T, E, F, Fut>(
    policy: ExponentialBuilder,
    op: F,
    retryable: impl Fn(&E) -> bool,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    op.retry(policy)
        .sleep(tokio::time::sleep)
        .when(retryable)
        .notify(|err: &E, delay: Duration| {
            tracing::debug!(%err, ?delay, "retrying after error");
        })
        .await
}

#[cfg(test)]
mod tests;
