//! Change tracking between syncs: which Services and EndpointSlices changed since the last successful
//! sync (the `*_changes_pending/total` metrics), when the oldest unsynced change arrived (/healthz),
//! and the last-change trigger times of changed slices (network programming latency, observed once the
//! change is in the kernel; the model reads them from the slices).
//!
//! The rules themselves are always rendered from the complete caches; what a sync writes is decided by
//! chain digests (see `sync.rs`), so nothing here can make rules wrong, only metrics late.

use std::collections::BTreeSet;
use std::time::{Instant, SystemTime};

/// Changes not yet written to the kernel.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    services: BTreeSet<String>,
    slices: BTreeSet<String>,
    trigger_times: Vec<SystemTime>,
    oldest: Option<Instant>,
}

/// What a sync took over from the tracker.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Taken {
    pub services: BTreeSet<String>,
    pub slices: BTreeSet<String>,
    pub trigger_times: Vec<SystemTime>,
}

impl Changes {
    pub(crate) fn service_changed(&mut self, key: String) {
        self.services.insert(key);
        self.oldest.get_or_insert_with(Instant::now);
    }

    pub(crate) fn slice_changed(&mut self, key: String, trigger: Option<SystemTime>) {
        self.slices.insert(key);
        self.trigger_times.extend(trigger);
        self.oldest.get_or_insert_with(Instant::now);
    }

    /// A change that is not tied to one object (node labels, a relist): only marks work as queued.
    pub(crate) fn other_changed(&mut self) {
        self.oldest.get_or_insert_with(Instant::now);
    }

    /// (pending service changes, pending endpoint changes).
    pub(crate) fn pending(&self) -> (usize, usize) {
        (self.services.len(), self.slices.len())
    }

    /// When the oldest unsynced change arrived.
    pub(crate) fn oldest(&self) -> Option<Instant> {
        self.oldest
    }

    /// Takes everything pending, at the start of a sync.
    pub(crate) fn take(&mut self) -> Taken {
        self.oldest = None;
        Taken {
            services: std::mem::take(&mut self.services),
            slices: std::mem::take(&mut self.slices),
            trigger_times: std::mem::take(&mut self.trigger_times),
        }
    }

    /// Puts back what a failed sync took, so metrics and health keep counting it as pending.
    pub(crate) fn restore(&mut self, taken: Taken, since: Instant) {
        self.services.extend(taken.services);
        self.slices.extend(taken.slices);
        self.trigger_times.extend(taken.trigger_times);
        self.oldest = Some(self.oldest.map_or(since, |o| o.min(since)));
    }
}

/// `ns/name` of any namespaced object.
pub(crate) fn object_key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests;
