//! Bounded-frequency runner (upstream's BoundedFrequencyRunner): a sync runs when something changed,
//! but never sooner than `min_interval` after the previous one ended (bursts of changes coalesce), at
//! least `max_interval` after it (the periodic resync), and again after a failure with a growing delay.
//!
//! Unlike upstream 1.34's runner (and like its older one, `burstSyncs` 2), a proxy that was idle may
//! run up to `burst` syncs back to back: the idle time between runs is banked, up to `burst` min
//! intervals, and each run spends one. A new Service and its EndpointSlice arrive as two watch
//! events; with a burst of 2 the second is synced right after the first instead of a min interval
//! later. Under steady churn the bank stays empty, so the sync rate (and CPU) is upstream's.
//!
//! A request may also be *held* ([`Trigger::request_held`]): it runs once its hold ends, or at once
//! when a plain request arrives meanwhile, whichever comes first. A Service change is held briefly
//! because its EndpointSlice change usually follows (a new Service's first slice, a port change's
//! rewritten slice): one sync then carries both, instead of a sync for the Service alone and one
//! more for its endpoints. A hold never adds a run; it only delays one, by at most the hold.
//!
//! It only decides *when*; the caller runs the sync and reports the result:
//! `while runner.wait().await { let ok = sync().await; runner.done(ok); }`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::Notify;
use tokio::time::Instant;

use svcnet_core::shutdown::Shutdown;

/// Why a run happens (for logs; the syncer decides full vs partial on its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    First,
    Changed,
    Periodic,
    Retry,
}

/// Cloneable handle that asks for a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Trigger(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    notify: Notify,
    pending: Mutex<Pending>,
}

/// The requests not yet covered by a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Pending {
    /// A plain request: run as soon as the intervals allow.
    now: bool,
    /// The earliest end of the held requests.
    held_until: Option<Instant>,
}

impl Trigger {
    /// Requests a run. A request made before `wait` lets a run start is covered by that run;
    /// one made while the run is in progress causes one more run afterwards.
    pub(crate) fn request(&self) {
        self.update(|p| p.now = true);
    }

    /// Requests a run that waits up to `hold` for a plain request to run with.
    pub(crate) fn request_held(&self, hold: Duration) {
        let until = Instant::now() + hold;
        self.update(|p| p.held_until = Some(p.held_until.map_or(until, |u| u.min(until))));
    }

    fn update(&self, f: impl FnOnce(&mut Pending)) {
        f(&mut self.pending());
        self.0.notify.notify_one();
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.0.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When the pending requests want their run: now, or at the end of a hold.
    fn due(&self) -> Option<Instant> {
        let p = *self.pending();
        if p.now { None } else { p.held_until }
    }
}

#[derive(Debug)]
pub(crate) struct Runner {
    min_interval: Duration,
    max_interval: Duration,
    /// Idle time saved at the end of the last run, at most `burst` min intervals.
    bank: Duration,
    bank_cap: Duration,
    trigger: Trigger,
    shutdown: Shutdown,
    last_run: Option<Instant>,
    retry_at: Option<Instant>,
    retry_delay: Duration,
    pub last_reason: Option<Reason>,
}

impl Runner {
    pub(crate) fn new(min_interval: Duration, max_interval: Duration, shutdown: Shutdown) -> Runner {
        let max_interval = max_interval.max(min_interval).max(Duration::from_millis(1));
        Runner {
            min_interval,
            max_interval,
            bank: Duration::ZERO,
            bank_cap: min_interval,
            trigger: Trigger::default(),
            shutdown,
            last_run: None,
            retry_at: None,
            retry_delay: Self::first_retry(min_interval, max_interval),
            last_reason: None,
        }
    }

    /// Lets an idle proxy run up to `burst` syncs back to back (1: never sooner than `min_interval`).
    pub(crate) fn with_burst(mut self, burst: u32) -> Runner {
        self.bank_cap = self.min_interval * burst.max(1);
        self
    }

    fn first_retry(min: Duration, max: Duration) -> Duration {
        min.max(Duration::from_secs(1)).min(max)
    }

    pub(crate) fn trigger(&self) -> Trigger {
        self.trigger.clone()
    }

    /// Waits until the next run is due. `false` once shutdown was requested.
    pub(crate) async fn wait(&mut self) -> bool {
        let reason = match self.last_run {
            None => Reason::First,
            Some(last) => {
                let periodic = last + self.max_interval;
                let retry = self.retry_at;
                // Biased: deterministic when several are ready (a retry due at the periodic time
                // is reported as a retry).
                tokio::select! {
                    biased;
                    () = self.shutdown.wait() => return false,
                    () = self.trigger.0.notify.notified() => Reason::Changed,
                    () = sleep_opt(retry) => Reason::Retry,
                    () = tokio::time::sleep_until(periodic) => Reason::Periodic,
                }
            }
        };
        if reason == Reason::Changed && !self.hold().await {
            return false;
        }
        if let Some(last) = self.last_run {
            let saved = (self.bank + (Instant::now() - last)).min(self.bank_cap);
            if saved >= self.min_interval {
                self.bank = saved - self.min_interval;
            } else {
                tokio::select! {
                    () = tokio::time::sleep(self.min_interval - saved) => {}
                    () = self.shutdown.wait() => return false,
                }
                self.bank = Duration::ZERO;
            }
        }
        // The run about to start covers every request made until now (the caller takes the changes
        // next): a request left stored here would only cause a run with nothing to do, and hold
        // the next real change back by up to `min_interval`.
        let _ = self.trigger.0.notify.notified().now_or_never();
        *self.trigger.pending() = Pending::default();
        self.last_reason = Some(reason);
        !self.shutdown.is_triggered()
    }

    /// Waits while only held requests are pending, until the earliest hold ends or a plain request
    /// arrives. `false` on shutdown.
    async fn hold(&self) -> bool {
        while let Some(until) = self.trigger.due() {
            if until <= Instant::now() {
                break;
            }
            tokio::select! {
                () = self.shutdown.wait() => return false,
                () = self.trigger.0.notify.notified() => {}
                () = tokio::time::sleep_until(until) => break,
            }
        }
        true
    }

    /// Reports the outcome of the run `wait` allowed.
    pub(crate) fn done(&mut self, ok: bool) {
        // As upstream: min_interval (and max_interval) count from the end of a run, so a sync
        // slower than min_interval never runs back to back with the next one under churn.
        self.last_run = Some(Instant::now());
        if ok {
            self.retry_at = None;
            self.retry_delay = Self::first_retry(self.min_interval, self.max_interval);
        } else {
            self.retry_at = Some(Instant::now() + self.retry_delay);
            self.retry_delay = (self.retry_delay * 2).min(self.max_interval);
        }
    }
}

async fn sleep_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
