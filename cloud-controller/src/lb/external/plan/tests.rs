//! Direct planner checks on hand-built observed objects (link spellings GCE may return).

use super::*;
use crate::lb::external::ensure::ensure;
use crate::testutil::{MiniGce, Scenario};

fn converged() -> (Scenario, MiniGce, DesiredLb) {
    let s = Scenario::new();
    let mut gce = MiniGce::default();
    gce.converge(&s, 3).unwrap();
    let plan = ensure(&s.service, &s.nodes, &s.cfg, &gce.observed(&s.names(), None)).unwrap();
    (s, gce, plan.desired.unwrap())
}

#[test]
fn links_from_another_endpoint_or_relative_are_equal() {
    let (s, gce, desired) = converged();
    let mut observed = gce.observed(&s.names(), None);
    let pool = observed.target_pool.as_mut().unwrap();
    // Relative instance paths (as upstream sends them) and a fake-GCE host for the health check.
    pool.instances = pool
        .instances
        .iter()
        .map(|i| objects::instance_key(i).to_owned())
        .collect();
    pool.health_checks = pool
        .health_checks
        .iter()
        .map(|l| format!("http://127.0.0.1:9999/compute/v1/{}", objects::link_key(l)))
        .collect();
    let fr = observed.forwarding_rule.as_mut().unwrap();
    fr.target = format!("http://10.0.0.1/compute/v1/{}", objects::link_key(&fr.target));
    assert_eq!(plan_ensure(&desired, &observed, &s.cfg), vec![]);
}

#[test]
fn foreign_health_check_on_pool_is_replaced_in_place() {
    let (s, gce, desired) = converged();
    let mut observed = gce.observed(&s.names(), None);
    observed.target_pool.as_mut().unwrap().health_checks =
        vec!["projects/proj/global/httpHealthChecks/someone-else".into()];
    let actions = plan_ensure(&desired, &observed, &s.cfg);
    assert_eq!(
        actions.iter().map(Action::label).collect::<Vec<_>>(),
        ["remove_health_check", "add_health_check"]
    );
}

fn leftover(desired: &DesiredLb, ip: &str) -> crate::objects::Address {
    crate::objects::Address {
        name: desired.names.lb.clone(),
        address: Some(ip.into()),
        ..Default::default()
    }
}

/// A reservation an interrupted sync left while the forwarding rule holds the IP: released, and
/// nothing else changes (upstream would keep it until the Service goes).
#[test]
fn leftover_reservation_is_released_when_the_forwarding_rule_holds_the_ip() {
    let (s, gce, desired) = converged();
    for ip in [desired.ip.as_str(), "203.0.113.200"] {
        let mut observed = gce.observed(&s.names(), None);
        observed.address = Some(leftover(&desired, ip));
        let actions = plan_ensure(&desired, &observed, &s.cfg);
        assert_eq!(
            actions,
            [Action::DeleteAddress {
                name: desired.names.lb.clone()
            }]
        );
    }
}

/// The forwarding rule must be recreated while a reservation holds another IP: the reservation
/// is moved to the rule's IP before the rule goes, and released after the new one exists.
#[test]
fn reservation_holding_another_ip_is_moved_before_a_recreate() {
    let (s, gce, _) = converged();
    let ported = s.ports("TCP", &[80, 81]);
    let plan = ensure(
        &ported.service,
        &ported.nodes,
        &ported.cfg,
        &gce.observed(&ported.names(), None),
    )
    .unwrap();
    let desired = plan.desired.unwrap();
    let mut observed = gce.observed(&ported.names(), None);
    observed.address = Some(leftover(&desired, "203.0.113.200"));
    let actions = plan_ensure(&desired, &observed, &ported.cfg);
    let lb = desired.names.lb.clone();
    assert_eq!(actions[0], Action::DeleteAddress { name: lb.clone() });
    assert!(
        matches!(&actions[1], Action::CreateAddress(a) if a.address.as_deref() == Some(desired.ip.as_str()))
    );
    let fr_delete = actions
        .iter()
        .position(|a| matches!(a, Action::DeleteForwardingRule { .. }));
    assert!(fr_delete.is_some_and(|i| i > 1), "{actions:?}");
    assert_eq!(actions.last(), Some(&Action::DeleteAddress { name: lb }));
}
