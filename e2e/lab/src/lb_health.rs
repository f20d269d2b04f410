//! GCE's health checker for target-pool members, as the VPC agent plays it: a member changes state only
//! after `healthyThreshold` consecutive passing probes or `unhealthyThreshold` consecutive failing ones
//! (the health check's own fields; GCE's defaults 2 and 2 when absent), so one slow probe on a busy
//! machine does not pull a node out of the load balancer's routes and break the connections it carried.
//! A member seen for the first time takes the state of its first probe, so a new load balancer or an
//! `externalTrafficPolicy: Local` check routes at once.

use std::collections::BTreeMap;

use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Member {
    healthy: bool,
    /// Consecutive probes that disagreed with `healthy`.
    against: u64,
}

/// Health per (member IP, health check name).
#[derive(Debug, Default)]
pub struct Checker {
    members: BTreeMap<(String, String), Member>,
}

fn threshold(hc: &Value, field: &str) -> u64 {
    hc[field].as_u64().filter(|n| *n > 0).unwrap_or(2)
}

impl Checker {
    /// Records one probe of `ip` by `hc` that passed or not; returns whether the member is healthy now.
    pub fn observe(&mut self, ip: &str, hc: &Value, passed: bool) -> bool {
        let key = (ip.to_owned(), hc["name"].as_str().unwrap_or_default().to_owned());
        let m = self.members.entry(key).or_insert(Member {
            healthy: passed,
            against: 0,
        });
        if passed == m.healthy {
            m.against = 0;
        } else {
            m.against += 1;
            let needed = if passed {
                threshold(hc, "healthyThreshold")
            } else {
                threshold(hc, "unhealthyThreshold")
            };
            if m.against >= needed {
                *m = Member {
                    healthy: passed,
                    against: 0,
                };
            }
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
