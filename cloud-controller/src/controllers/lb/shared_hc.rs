//! Upstream's sharedResourceLock for the shared node health check and its firewall, and a short
//! memory of their last read: new load balancers starting together read them once, not each.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::{Mutex as AsyncMutex, MutexGuard};

use crate::gce::observe::ObservedLb;
use crate::gce::read::Touched;
use crate::naming::LbNames;

/// How long a read of the shared node health check and firewall stands in for another one. Only
/// this controller creates or deletes them, under the lock, which clears the memory; were one
/// deleted behind its back, a pool insert referencing it fails and the retry reads it again.
const SHARED_SEEN_TTL: Duration = Duration::from_secs(5);

#[derive(Default)]
pub(crate) struct SharedHc {
    /// Plans that create or delete the shared objects run one at a time, re-observed under it.
    lock: AsyncMutex<()>,
    /// The shared objects as a sync last read them, and when.
    seen: Mutex<Option<(Instant, ObservedLb)>>,
}

/// The `kind/name` keys of the shared objects (what [`Touched`] and self links use).
pub(crate) fn shared_keys(names: &LbNames) -> Touched {
    [
        format!("httpHealthChecks/{}", names.nodes_health_check),
        format!("firewalls/{}", names.nodes_health_check_firewall),
    ]
    .into()
}

impl SharedHc {
    pub(crate) async fn lock(&self) -> MutexGuard<'_, ()> {
        self.lock.lock().await
    }

    /// The shared objects of a recent read, as an observation holding only them.
    pub(crate) fn recent(&self) -> Option<ObservedLb> {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.as_ref()
            .filter(|(at, _)| at.elapsed() < SHARED_SEEN_TTL)
            .map(|(_, o)| o.clone())
    }

    /// Remembers the shared objects of `obs` (just read from GCE), or forgets them (None: about to
    /// change them).
    pub(crate) fn saw(&self, obs: Option<(&ObservedLb, &LbNames)>) {
        let entry = obs.map(|(o, names)| {
            let mut only = ObservedLb::default();
            only.observed.nodes_health_check = o.observed.nodes_health_check.clone();
            only.observed.nodes_health_check_firewall = o.observed.nodes_health_check_firewall.clone();
            for key in shared_keys(names) {
                if let Some(link) = o.self_links.get(&key) {
                    only.self_links.insert(key, link.clone());
                }
            }
            (Instant::now(), only)
        });
        *self.seen.lock().unwrap_or_else(|p| p.into_inner()) = entry;
    }
}
