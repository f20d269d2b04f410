//! Client-side rate limiting, all in one place: a token bucket per GCE quota group in front of
//! every call, so the controller stays under the project's API rate quota instead of finding it
//! through 403 rateLimitExceeded (upstream's cloud-provider-gcp does the same with a flowcontrol
//! token bucket per operation), and the pacing of operation polls.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

/// GCE counts rate quotas per group of methods, each group separately (reads: get/list; writes:
/// insert/delete/patch/update/custom verbs; operations: operation get/wait, i.e. polls); the
/// controller keeps one token bucket per group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QuotaGroup {
    Read,
    Write,
    /// Taken by `ops::wait` before each operation poll.
    Operations,
}

/// One token bucket per [`QuotaGroup`].
#[derive(Debug)]
pub(crate) struct QuotaLimits {
    read: RateLimiter,
    write: RateLimiter,
    operations: RateLimiter,
}

impl QuotaLimits {
    /// `qps` per second and `burst` for each group alike; `qps` <= 0 disables limiting.
    pub(crate) fn new(qps: f64, burst: u32) -> Self {
        QuotaLimits {
            read: RateLimiter::new(qps, burst),
            write: RateLimiter::new(qps, burst),
            operations: RateLimiter::new(qps, burst),
        }
    }

    /// The token bucket of a quota group.
    pub(crate) fn of(&self, group: QuotaGroup) -> &RateLimiter {
        match group {
            QuotaGroup::Read => &self.read,
            QuotaGroup::Write => &self.write,
            QuotaGroup::Operations => &self.operations,
        }
    }
}

/// Pauses between operation polls: the first `initial`, each next one doubled, at most `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PollPacing {
    pub initial: Duration,
    pub max: Duration,
}

#[derive(Debug)]
pub(crate) struct RateLimiter {
    /// Tokens added per second (0 = unlimited).
    qps: f64,
    burst: f64,
    state: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl RateLimiter {
    /// `qps` <= 0 disables limiting. The bucket starts full.
    pub(crate) fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        RateLimiter {
            qps,
            burst,
            state: Mutex::new(Bucket {
                tokens: burst,
                last: Instant::now(),
            }),
        }
    }

    #[cfg(test)]
    pub(crate) fn unlimited() -> Self {
        Self::new(0.0, 1)
    }

    /// Waits until a token is available and takes it. Waiters queue on the mutex, so they are
    /// served in order and none starves.
    pub(crate) async fn acquire(&self) {
        if self.qps <= 0.0 {
            return;
        }
        let mut bucket = self.state.lock().await;
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.qps).min(self.burst);
        bucket.last = now;
        if bucket.tokens < 1.0 {
            let wait = Duration::from_secs_f64((1.0 - bucket.tokens) / self.qps);
            // Holding the lock while sleeping keeps later callers behind this one.
            tokio::time::sleep(wait).await;
            bucket.tokens = 1.0;
            bucket.last = Instant::now();
        }
        bucket.tokens -= 1.0;
    }
}

#[cfg(test)]
mod tests;
