//! After a start (a restart, a leader change) every Service arrives at once. Building new load
//! balancers and repairing changed ones is urgent; re-reading the ones that were converged when
//! the previous leader stopped is not. Each re-read costs about 8 GETs from the read quota, so
//! verifying 1000 of them first would keep a new Service waiting for minutes.
//!
//! The queue gives every Service that *looks converged* at first sight (both finalizers, an
//! ingress IP, not being deleted, not synced by this process yet) a verification slot: slots are
//! `interval` apart, in the order Services were first seen, so the verifications use a bounded
//! share of the read quota and everything else goes first. A Service whose object changes before
//! its slot (a watch event with a new resourceVersion) is synced at once. Pure bookkeeping: the
//! caller passes the clock.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// GETs one verification of a converged load balancer costs (the LB's objects; see C1).
pub(crate) const READS_PER_VERIFICATION: f64 = 8.0;
/// Share of the read quota the background verifications may use; the rest is left to new and
/// changed Services (and to gcloud, the console, other controllers).
pub(crate) const VERIFY_READ_SHARE: f64 = 0.75;

/// Pause between two verification slots for a read bucket of `read_qps` GETs per second
/// (0 = unlimited: no pause, nothing is held back).
pub(crate) fn verify_interval(read_qps: f64) -> Duration {
    if read_qps <= 0.0 || !read_qps.is_finite() {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(READS_PER_VERIFICATION / (read_qps * VERIFY_READ_SHARE))
}

#[derive(Debug)]
pub(crate) struct VerifyQueue {
    interval: Duration,
    /// Per Service key: the resourceVersion it had at first sight and its slot.
    slots: HashMap<String, (String, Instant)>,
    /// The latest slot handed out.
    last: Option<Instant>,
}

impl VerifyQueue {
    pub(crate) fn new(interval: Duration) -> Self {
        VerifyQueue {
            interval,
            slots: HashMap::new(),
            last: None,
        }
    }

    /// For a converged-looking Service not yet synced by this process: how long to wait before
    /// verifying it (None = now). `version` is its resourceVersion.
    pub(crate) fn wait(&mut self, key: &str, version: &str, now: Instant) -> Option<Duration> {
        if self.interval.is_zero() {
            return None;
        }
        match self.slots.get(key) {
            Some((seen, slot)) if seen == version && *slot > now => Some(*slot - now),
            Some(_) => {
                // Its slot came, or it changed meanwhile: now.
                self.slots.remove(key);
                None
            }
            None => {
                let slot = self.last.map_or(now, |l| l.max(now)) + self.interval;
                self.last = Some(slot);
                self.slots.insert(key.to_owned(), (version.to_owned(), slot));
                Some(slot - now)
            }
        }
    }

    /// The Service was synced (or deleted): it needs no slot any more.
    pub(crate) fn forget(&mut self, key: &str) {
        self.slots.remove(key);
    }

    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests;
