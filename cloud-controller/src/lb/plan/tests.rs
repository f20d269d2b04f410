//! Direct planner checks on hand-built observed objects (link spellings GCE may return).

use super::*;
use crate::lb::ensure::ensure;
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
        .map(|i| gce::instance_key(i).to_owned())
        .collect();
    pool.health_checks = pool
        .health_checks
        .iter()
        .map(|l| format!("http://127.0.0.1:9999/compute/v1/{}", gce::link_key(l)))
        .collect();
    let fr = observed.forwarding_rule.as_mut().unwrap();
    fr.target = format!("http://10.0.0.1/compute/v1/{}", gce::link_key(&fr.target));
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

#[test]
fn address_holding_another_ip_is_replaced_before_use() {
    let (s, gce, desired) = converged();
    let mut observed = gce.observed(&s.names(), None);
    observed.address.as_mut().unwrap().address = Some("203.0.113.200".into());
    let actions = plan_ensure(&desired, &observed, &s.cfg);
    assert_eq!(
        actions[0],
        Action::DeleteAddress {
            name: desired.names.lb.clone()
        }
    );
    assert!(
        matches!(&actions[1], Action::CreateAddress(a) if a.address.as_deref() == Some(desired.ip.as_str()))
    );
    assert_eq!(actions.len(), 2);
}
