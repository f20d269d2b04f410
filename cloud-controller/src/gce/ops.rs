//! Waiting for GCE operations. The official client's `until_done()` loop polls without a hook
//! for the rate limiter, and GCE counts operation reads in a quota group of their own; so the
//! controller drives the client's poller itself ([`Poller::poll`]): the first `poll()` sends the
//! call (its token was taken from the write bucket by the executor), every later one is an
//! operation GET and first takes a token from the operations bucket. Pauses between polls are
//! those the client's polling policy used (first `initial`, doubling up to `max`). The poller
//! reports an operation that ended DONE *with an error* as Ok (GCE reports asynchronous failures
//! that way): [`check_done`] turns those into errors.

use std::time::Duration;

use google_cloud_compute_v1::model::Operation;
use google_cloud_compute_v1::model::operation::Status;
use google_cloud_lro::{Poller, PollingResult};

use crate::gce::client::Gce;
use crate::gce::error::GceError;
use crate::gce::ratelimit::{PollPacing, QuotaGroup, RateLimiter};

/// Ok when the operation finished without an error.
pub(crate) fn check_done(call: &str, op: &Operation) -> Result<(), GceError> {
    if op.status != Some(Status::Done) {
        return Err(GceError::new(
            call,
            format!("operation {} did not finish", op.name.as_deref().unwrap_or("?")),
        ));
    }
    let first = op.error.as_ref().and_then(|e| e.errors.first());
    if first.is_none() && op.http_error_status_code.is_none() {
        return Ok(());
    }
    let status = op
        .http_error_status_code
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400);
    if first.is_none() && status.is_none() {
        return Ok(());
    }
    let message = first
        .and_then(|e| e.message.clone())
        .or_else(|| op.http_error_message.clone())
        .unwrap_or_else(|| "operation failed".to_owned());
    Err(GceError {
        call: call.to_owned(),
        status,
        reason: first.and_then(|e| e.code.clone()),
        message,
        from_operation: true,
        transport: false,
    })
}

/// Sends the call behind `poller` and waits for its operation (see the module docs), under the
/// call timeout of `gce`.
pub(crate) async fn wait<P>(gce: &Gce, call: &str, poller: P) -> Result<Operation, GceError>
where
    P: Poller<Operation, Operation>,
{
    await_operation(
        gce.limiter(QuotaGroup::Operations),
        gce.poll_pacing,
        gce.call_timeout,
        call,
        poller,
    )
    .await
}

/// [`wait`] with its parts passed in: polls through `limiter` with `pacing`, fails after
/// `timeout`, and checks that the operation finished without an error.
pub(crate) async fn await_operation<P>(
    limiter: &RateLimiter,
    pacing: PollPacing,
    timeout: Duration,
    call: &str,
    poller: P,
) -> Result<Operation, GceError>
where
    P: Poller<Operation, Operation>,
{
    let op = match tokio::time::timeout(timeout, poll_until_done(limiter, pacing, poller)).await {
        Err(_) => {
            let mut e = GceError::new(call, format!("no result within {timeout:?}"));
            e.transport = true;
            return Err(e);
        }
        Ok(Err(PollEnd::Gax(e))) => return Err(GceError::from_gax(call, &e)),
        Ok(Err(PollEnd::NoName)) => {
            return Err(GceError::new(call, "the operation has no name to poll"));
        }
        Ok(Ok(op)) => op,
    };
    check_done(call, &op)?;
    Ok(op)
}

/// Why polling stopped without an operation.
enum PollEnd {
    Gax(google_cloud_gax::error::Error),
    /// `poll()` had nothing more to do: the operation in progress carried no name (the client's
    /// own loop panics there).
    NoName,
}

/// The client's `until_done()` loop with a token before every poll after the first: transient
/// poll errors are polled again (the client's polling error policy decides when they are final).
async fn poll_until_done<P>(
    limiter: &RateLimiter,
    pacing: PollPacing,
    mut poller: P,
) -> Result<Operation, PollEnd>
where
    P: Poller<Operation, Operation>,
{
    let mut pause = pacing.initial.min(pacing.max);
    let mut first = true;
    loop {
        if !first {
            limiter.acquire().await;
        }
        first = false;
        match poller.poll().await {
            Some(PollingResult::Completed(result)) => return result.map_err(PollEnd::Gax),
            Some(PollingResult::InProgress(_)) | Some(PollingResult::PollingError(_)) => {}
            None => return Err(PollEnd::NoName),
        }
        tokio::time::sleep(pause).await;
        pause = pause.saturating_mul(2).min(pacing.max);
    }
}

#[cfg(test)]
mod tests;
