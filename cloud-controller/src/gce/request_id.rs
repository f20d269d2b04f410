//! GCE's `requestId` and the operation-poll error policy: together they make a mutation happen
//! at most once however often a call or its wait is retried.
//!
//! Every mutating Compute method takes a `requestId` (a UUID other than the zero UUID): GCE
//! answers a repeat with the same id, within its window, with the first call's operation instead
//! of mutating again. The executor draws one per action and sends it with every attempt, so a
//! retry after an ambiguous failure (a reset connection, a 503 after GCE accepted the call) is
//! harmless; only an operation that ended DONE with an error makes it draw a new one
//! ([`MutationId`]). Failures while *waiting* are retried by polling the operation again
//! ([`PollTransientErrors`]), not by calling again.

use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use google_cloud_gax::error::Error;
use google_cloud_gax::error::rpc::Code;
use google_cloud_gax::polling_error_policy::PollingErrorPolicy;
use google_cloud_gax::polling_state::PollingState;
use google_cloud_gax::retry_result::RetryResult;

use crate::gce::error::GceError;

/// A random (version 4) UUID. The bits come from std's per-process random hasher keys mixed with
/// a counter and the clock: unique within the process by the counter, across processes by the
/// keys; no extra dependency for 122 bits that only need to be unique, not secret.
pub(crate) fn new_request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let word = |salt: u64| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(salt);
        h.write_u64(n);
        h.write_u128(now);
        h.write_u32(std::process::id());
        h.finish()
    };
    let (hi, lo) = (word(1), word(2));
    // Version 4 in the high nibble of the 7th byte, variant 10 in the top bits of the 9th.
    let hi = (hi & !0xf000) | 0x4000;
    let lo = (lo & !(0b11 << 62)) | (0b10 << 62);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// The requestId of one mutation across its attempts. Kept after an ambiguous failure (GCE may
/// have accepted the call: the same id gets that operation back). Renewed after the operation
/// ended DONE with an error: GCE answers the old id with that same failed operation for as long as
/// it remembers the id, so retrying with it only replays the failure (each replay after a longer
/// backoff), while the failed operation changed nothing and a new id is a safe new attempt.
#[derive(Debug)]
pub(crate) struct MutationId(Mutex<String>);

impl Default for MutationId {
    fn default() -> Self {
        MutationId(Mutex::new(new_request_id()))
    }
}

impl MutationId {
    /// The id the next attempt sends.
    pub(crate) fn current(&self) -> String {
        match self.0.lock() {
            Ok(id) => id.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Takes note of an attempt's failure (see the type's docs).
    pub(crate) fn failed(&self, err: &GceError) {
        if !err.from_operation {
            return;
        }
        let fresh = new_request_id();
        match self.0.lock() {
            Ok(mut id) => *id = fresh,
            Err(poisoned) => *poisoned.into_inner() = fresh,
        }
    }
}

/// Keeps polling an operation after a poll failed with an error worth retrying (429, 5xx, rate
/// limit, transport: [`GceError::is_retryable`]); any other poll error ends the wait. The
/// client's default policy gives up on everything but 503, which made the executor send the
/// mutation again. The wait as a whole is bounded by the call timeout (`ops::wait`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PollTransientErrors;

impl PollingErrorPolicy for PollTransientErrors {
    fn on_error(&self, _state: &PollingState, error: Error) -> RetryResult {
        // Errors that carry no HTTP status are classified by their RPC code alone.
        let transient_code = error.status().is_some_and(|s| {
            matches!(
                s.code,
                Code::Unavailable | Code::ResourceExhausted | Code::Internal
            )
        });
        if transient_code || GceError::from_gax("poll", &error).is_retryable() {
            RetryResult::Continue(error)
        } else {
            RetryResult::Permanent(error)
        }
    }
}

#[cfg(test)]
mod tests;
