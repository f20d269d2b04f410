//! "Does GCE's copy differ from what we want?" per object, with upstream's tolerances (enumerated
//! vs ranged firewall ports, health check values larger than ours kept, empty pool affinity
//! ignored). Fields GCE fills in on its own are never compared, so a no-op resync plans nothing.

use std::collections::{BTreeMap, BTreeSet};

use crate::lb::spec::normalize_cidrs;
use crate::objects::{self, Firewall, FirewallAllowed, ForwardingRule, HealthCheck, HttpHealthCheck};

fn set(list: &[String]) -> BTreeSet<&str> {
    list.iter().map(String::as_str).collect()
}

/// Firewall needs a patch. `alt_ports` is another acceptable spelling of the ports.
pub(crate) fn firewall_differs(want: &Firewall, have: &Firewall, alt_ports: Option<&[String]>) -> bool {
    let allowed_ok = match (want.allowed.as_slice(), have.allowed.as_slice()) {
        ([want_allowed], [have_allowed]) => {
            have_allowed
                .ip_protocol
                .eq_ignore_ascii_case(&want_allowed.ip_protocol)
                && (set(&have_allowed.ports) == set(&want_allowed.ports)
                    || alt_ports.is_some_and(|alt| set(&have_allowed.ports) == set(alt)))
        }
        // A mixed-protocol Service's firewall: one entry per protocol, in any order.
        ([], _) => false,
        (want_allowed, have_allowed) => {
            matches!((by_protocol(want_allowed), by_protocol(have_allowed)), (Some(w), Some(h)) if w == h)
        }
    };
    have.description != want.description
        || !allowed_ok
        || normalize_cidrs(&have.source_ranges) != normalize_cidrs(&want.source_ranges)
        || normalize_cidrs(&have.destination_ranges) != normalize_cidrs(&want.destination_ranges)
        || set(&have.target_tags) != set(&want.target_tags)
}

/// Lower-cased protocol -> its port set; a protocol listed twice compares unequal.
fn by_protocol(allowed: &[FirewallAllowed]) -> Option<BTreeMap<String, BTreeSet<&str>>> {
    let mut out = BTreeMap::new();
    for a in allowed {
        if out.insert(a.ip_protocol.to_lowercase(), set(&a.ports)).is_some() {
            return None;
        }
    }
    Some(out)
}

/// Upstream needToUpdateHTTPHealthChecks: identity fields must match, timing values may only be
/// larger than ours (an operator may have slowed the check down on purpose).
pub(crate) fn health_check_differs(want: &HttpHealthCheck, have: &HttpHealthCheck) -> bool {
    have.port != want.port
        || have.request_path != want.request_path
        || have.description != want.description
        || have.check_interval_sec < want.check_interval_sec
        || have.timeout_sec < want.timeout_sec
        || have.unhealthy_threshold < want.unhealthy_threshold
        || have.healthy_threshold < want.healthy_threshold
}

/// Upstream mergeHTTPHealthChecks: the update keeps the larger of the two timing values.
pub(crate) fn merged_health_check(want: &HttpHealthCheck, have: &HttpHealthCheck) -> HttpHealthCheck {
    HttpHealthCheck {
        check_interval_sec: want.check_interval_sec.max(have.check_interval_sec),
        timeout_sec: want.timeout_sec.max(have.timeout_sec),
        unhealthy_threshold: want.unhealthy_threshold.max(have.unhealthy_threshold),
        healthy_threshold: want.healthy_threshold.max(have.healthy_threshold),
        ..want.clone()
    }
}

/// The forwarding rule must be deleted and recreated (GCE cannot update these fields):
/// IP, port range or protocol changed (upstream forwardingRuleNeedsUpdate).
pub(crate) fn forwarding_rule_needs_recreate(want: &ForwardingRule, have: &ForwardingRule) -> bool {
    have.ip_address != want.ip_address
        || have.port_range != want.port_range
        || have.ip_protocol != want.ip_protocol
}

/// The pool's affinity changed. Upstream ignores an empty affinity GCE may report, to avoid a
/// needless recreation (downtime) for pools created without one.
pub(crate) fn affinity_changed(want: &str, have: &str) -> bool {
    !have.is_empty() && have != want
}

pub(crate) fn links_equal(a: &[String], b: &[String]) -> bool {
    let a: BTreeSet<&str> = a.iter().map(|l| objects::link_key(l)).collect();
    let b: BTreeSet<&str> = b.iter().map(|l| objects::link_key(l)).collect();
    a == b
}

/// Upstream needToUpdateHealthChecks, for the (non-legacy) checks of backend-service LBs.
pub(crate) fn health_check_v1_differs(want: &HealthCheck, have: &HealthCheck) -> bool {
    have.http_health_check.port != want.http_health_check.port
        || have.http_health_check.request_path != want.http_health_check.request_path
        || have.type_ != want.type_
        || have.description != want.description
        || have.check_interval_sec < want.check_interval_sec
        || have.timeout_sec < want.timeout_sec
        || have.unhealthy_threshold < want.unhealthy_threshold
        || have.healthy_threshold < want.healthy_threshold
}

/// Upstream mergeHealthChecks: larger timing values an operator set are kept.
pub(crate) fn merged_health_check_v1(want: &HealthCheck, have: &HealthCheck) -> HealthCheck {
    HealthCheck {
        check_interval_sec: want.check_interval_sec.max(have.check_interval_sec),
        timeout_sec: want.timeout_sec.max(have.timeout_sec),
        unhealthy_threshold: want.unhealthy_threshold.max(have.unhealthy_threshold),
        healthy_threshold: want.healthy_threshold.max(have.healthy_threshold),
        ..want.clone()
    }
}
