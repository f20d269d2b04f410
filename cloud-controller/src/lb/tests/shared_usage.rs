//! When the planner needs to know whether another pool uses the shared node health check (a
//! listing of every target pool, so O(load balancers) GCE work per sync), and which GCE object
//! each action touches (a sync re-reads only those).

use crate::gce::{Firewall, HttpHealthCheck, TargetPool};
use crate::lb::action::Action;
use crate::lb::observed::Observed;
use crate::testutil::Scenario;

fn with_shared(pool_uses_shared: bool) -> (Observed, crate::naming::LbNames) {
    let names = Scenario::new().names();
    let link = |n: &str| format!("https://compute/projects/proj/global/httpHealthChecks/{n}");
    let obs = Observed {
        nodes_health_check: Some(HttpHealthCheck {
            name: names.nodes_health_check.clone(),
            ..Default::default()
        }),
        nodes_health_check_firewall: Some(Firewall {
            name: names.nodes_health_check_firewall.clone(),
            ..Default::default()
        }),
        target_pool: Some(TargetPool {
            name: names.lb.clone(),
            health_checks: vec![if pool_uses_shared {
                link(&names.nodes_health_check)
            } else {
                link(&names.local_health_check)
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    (obs, names)
}

#[test]
fn a_cluster_lb_never_needs_the_pool_listing() {
    let (obs, names) = with_shared(true);
    assert!(!obs.shared_usage_matters(&names, false, false));
}

#[test]
fn switching_to_local_needs_it_only_while_our_pool_uses_the_shared_check() {
    let (obs, names) = with_shared(true);
    assert!(obs.shared_usage_matters(&names, true, false));
    let (obs, names) = with_shared(false);
    assert!(!obs.shared_usage_matters(&names, true, false));
}

#[test]
fn delete_needs_it_while_the_shared_check_or_its_firewall_exists() {
    let (mut obs, names) = with_shared(false);
    assert!(obs.shared_usage_matters(&names, false, true));
    obs.nodes_health_check = None;
    assert!(obs.shared_usage_matters(&names, false, true), "firewall left");
    obs.nodes_health_check_firewall = None;
    assert!(!obs.shared_usage_matters(&names, false, true));
}

#[test]
fn every_action_names_the_collection_it_touches() {
    let pool = || "a1".to_owned();
    let cases = [
        (Action::DeleteAddress { name: pool() }, "addresses/a1"),
        (Action::DeleteFirewall { name: "f".into() }, "firewalls/f"),
        (
            Action::DeleteHealthCheck { name: "h".into() },
            "httpHealthChecks/h",
        ),
        (
            Action::AddInstances {
                pool: pool(),
                instances: vec![],
            },
            "targetPools/a1",
        ),
        (
            Action::RemoveHealthCheck {
                pool: pool(),
                health_check: "h".into(),
            },
            "targetPools/a1",
        ),
        (
            Action::SetTarget {
                forwarding_rule: pool(),
                target: "t".into(),
            },
            "forwardingRules/a1",
        ),
        (
            Action::DeleteForwardingRule { name: pool() },
            "forwardingRules/a1",
        ),
    ];
    for (action, key) in cases {
        assert_eq!(action.target_key(), key, "{action:?}");
    }
}
