//! GCE's health checker for target-pool members, as the VPC agent plays it: a member changes state only
//! after `healthyThreshold` consecutive passing probes or `unhealthyThreshold` consecutive failing ones
//! (the health check's own fields; GCE's defaults 2 and 2 when absent), and only once those probes span
//! as long as GCE's would: GCE probes every `checkIntervalSec`, so it cannot call a member unhealthy
//! before `(unhealthyThreshold - 1) x checkIntervalSec` of failures (16 s for the nodes' check, 8 s x 3).
//! The agent probes every tick, far more often, and without the span a proxy restart of a second or two
//! (a rollout) or one slow probe on a busy machine would pull a node out of the load balancer's routes
//! and break the connections it carried, where GCE would not. A member seen for the first time takes
//! the state of its first probe, so a new load balancer or an `externalTrafficPolicy: Local` check
//! routes at once.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Member {
    healthy: bool,
    /// Consecutive probes that disagreed with `healthy`.
    against: u64,
    /// When the first of them ran.
    since: Option<Instant>,
}

/// Health per (member IP, health check name).
#[derive(Debug, Default)]
pub struct Checker {
    members: BTreeMap<(String, String), Member>,
}

fn threshold(hc: &Value, field: &str) -> u64 {
    hc[field].as_u64().filter(|n| *n > 0).unwrap_or(2)
}

/// GCE's probe interval for `hc` (the fake's default, 5 s, when absent).
fn interval(hc: &Value) -> Duration {
    Duration::from_secs(hc["checkIntervalSec"].as_u64().unwrap_or(5))
}

impl Checker {
    /// Records one probe of `ip` by `hc`, run at `now`, that passed or not; returns whether the member
    /// is healthy now. A change of state is logged (the agent's log is the e2e's diagnosis).
    pub fn observe(&mut self, ip: &str, hc: &Value, passed: bool, now: Instant) -> bool {
        let name = hc["name"].as_str().unwrap_or_default();
        let key = (ip.to_owned(), name.to_owned());
        let m = self.members.entry(key).or_insert(Member {
            healthy: passed,
            against: 0,
            since: None,
        });
        if passed == m.healthy {
            m.against = 0;
            m.since = None;
            return m.healthy;
        }
        m.against += 1;
        let since = *m.since.get_or_insert(now);
        let needed = threshold(
            hc,
            if passed {
                "healthyThreshold"
            } else {
                "unhealthyThreshold"
            },
        );
        let span = interval(hc) * u32::try_from(needed - 1).unwrap_or(u32::MAX);
        let lasted = now.saturating_duration_since(since);
        if m.against >= needed && lasted >= span {
            eprintln!(
                "health: {ip} by {name}: {} after {} probes over {:.1} s",
                if passed { "healthy" } else { "unhealthy" },
                m.against,
                lasted.as_secs_f64()
            );
            *m = Member {
                healthy: passed,
                against: 0,
                since: None,
            };
        }
        m.healthy
    }

    /// Forgets members no longer probed (a node removed, a pool deleted), so a returning one starts over.
    pub fn retain(&mut self, probed: &[(String, String)]) {
        self.members.retain(|k, _| probed.contains(k));
    }
}

#[cfg(test)]
mod tests;
