//! Retries of GCE calls: backon exponential backoff for retryable errors (rate limits, quota, 429,
//! 5xx, transport), each attempt behind the token bucket of its quota group; a mutation's attempts
//! share one `requestId` until its operation ends DONE with an error (`request_id::MutationId`).

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};

use crate::gce::client::Gce;
use crate::gce::error::GceError;
use crate::gce::ratelimit::QuotaGroup;
use crate::gce::request_id::MutationId;

/// Retry policy for GCE calls.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    pub min_delay: Duration,
    pub max_delay: Duration,
    pub max_times: usize,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            min_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(10),
            max_times: 8,
        }
    }
}

impl RetryPolicy {
    pub(crate) fn backoff(&self) -> ExponentialBuilder {
        ExponentialBuilder::default()
            .with_min_delay(self.min_delay)
            .with_max_delay(self.max_delay)
            .with_max_times(self.max_times)
            .with_jitter()
    }
}

/// Runs `op` with the rate limiter of its quota group in front and backon retries for retryable
/// errors.
pub(crate) async fn with_retries<T, F, Fut>(
    gce: &Gce,
    policy: &RetryPolicy,
    group: QuotaGroup,
    mut op: F,
) -> Result<T, GceError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, GceError>>,
{
    let limiter = gce.limiter(group);
    let attempt = || {
        let fut = op();
        async move {
            limiter.acquire().await;
            fut.await
        }
    };
    attempt
        .retry(policy.backoff())
        .sleep(tokio::time::sleep)
        .when(GceError::is_retryable)
        .notify(|err: &GceError, delay: Duration| {
            tracing::info!(%err, ?delay, "GCE call failed, backing off");
        })
        .await
}

/// [`with_retries`] for one mutation: the attempts share a requestId, so a retry after GCE already
/// accepted the call gets its operation back instead of a second mutation; an operation that ended
/// DONE with an error gets a new id for the next attempt ([`MutationId`]).
pub(crate) async fn with_mutation_retries<T, F, Fut>(
    gce: &Gce,
    policy: &RetryPolicy,
    mut op: F,
) -> Result<T, GceError>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Result<T, GceError>>,
{
    let id = MutationId::default();
    let id = &id;
    with_retries(gce, policy, QuotaGroup::Write, || {
        let fut = op(id.current());
        async move {
            let result = fut.await;
            if let Err(e) = &result {
                id.failed(e);
            }
            result
        }
    })
    .await
}
