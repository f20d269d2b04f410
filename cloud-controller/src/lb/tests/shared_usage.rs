//! The shared node health check on delete, the upstream way: no target pool is listed; the
//! delete is tried once our pool is gone and GCE's resourceInUseByAnotherResource means "kept"
//! (MiniGce refuses like GCE). And which GCE object each action touches (a sync re-reads only those).

use crate::lb::external::delete::plan_delete;
use crate::lb::stages::stages;
use crate::objects::action::Action;
use crate::objects::observed::Observed;
use crate::objects::{Firewall, HttpHealthCheck};
use crate::testutil::{MiniGce, Scenario};

const NODE_HC: &str = "k8s-0123456789abcdef-node";

fn two_lbs() -> (MiniGce, Scenario, Scenario) {
    let first = Scenario::new();
    let mut second = Scenario::new().name("default", "second");
    second.service.metadata.uid = Some("99999999-0000-0000-0000-000000000000".into());
    let mut gce = MiniGce::default();
    gce.converge(&first, 3).expect("first LB");
    gce.converge(&second, 3).expect("second LB");
    (gce, first, second)
}

fn shared_delete() -> Action {
    Action::DeleteHealthCheck {
        name: NODE_HC.into(),
        keep_if_in_use: true,
    }
}

#[test]
fn deleting_one_of_two_lbs_keeps_the_shared_check_and_the_last_removes_it() {
    let (mut gce, first, second) = two_lbs();
    let hc_fw = format!("{NODE_HC}-http-hc");

    let applied = gce.delete_lb(&first.names(), 3).expect("delete settles");
    assert!(
        applied.contains(&shared_delete()),
        "the delete was tried: {applied:#?}"
    );
    assert_eq!(gce.kept, 1, "refused as in use and counted as done");
    assert!(gce.health_checks.contains_key(NODE_HC));
    assert!(gce.firewalls.contains_key(&hc_fw), "its firewall stays too");
    assert!(
        !applied.contains(&Action::DeleteFirewall { name: hc_fw.clone() }),
        "no firewall delete after a kept check"
    );
    // Everything of the first LB is gone; the second is untouched.
    let first_lb = first.names().lb;
    assert!(!gce.pools.contains_key(&first_lb));
    assert!(!gce.addresses.contains_key(&first_lb));
    assert!(!gce.firewalls.contains_key(&format!("k8s-fw-{first_lb}")));
    assert_eq!(gce.pools.len(), 1);
    assert_eq!(gce.forwarding_rules.len(), 1);

    let applied = gce.delete_lb(&second.names(), 3).expect("delete settles");
    assert!(applied.contains(&shared_delete()));
    assert_eq!(gce.kept, 1, "the last user's delete is not refused");
    assert!(!gce.health_checks.contains_key(NODE_HC), "last user removes it");
    assert!(!gce.firewalls.contains_key(&hc_fw), "and its firewall");
    assert!(gce.firewalls.is_empty() && gce.pools.is_empty() && gce.addresses.is_empty());
}

#[test]
fn the_pool_is_deleted_in_an_earlier_stage_than_the_shared_check() {
    let (gce, first, _) = two_lbs();
    let names = first.names();
    let plan = plan_delete(&names, &gce.observed(&names, None));
    let stage_of = |want: &Action| {
        stages(&plan)
            .iter()
            .position(|st| st.contains(want))
            .unwrap_or_else(|| panic!("{want:?} not planned: {plan:#?}"))
    };
    let pool = stage_of(&Action::DeleteTargetPool {
        name: names.lb.clone(),
    });
    let hc = stage_of(&shared_delete());
    let hc_fw = stage_of(&Action::DeleteFirewall {
        name: names.nodes_health_check_firewall.clone(),
    });
    assert!(
        pool < hc && hc < hc_fw,
        "pool {pool}, check {hc}, its firewall {hc_fw}"
    );
}

#[test]
fn a_failed_pool_delete_stops_before_the_shared_check() {
    let (mut gce, first, _) = two_lbs();
    let names = first.names();
    // Our forwarding rule exists in GCE but the observation missed it: GCE refuses the pool delete.
    let mut observed = gce.observed(&names, None);
    observed.forwarding_rule = None;
    let plan = plan_delete(&names, &observed);
    let before = gce.calls;
    let err = gce.run_plan(&plan).expect_err("pool delete refused");
    assert!(err.contains("pool"), "{err}");
    assert_eq!(gce.calls - before, 1, "nothing after the failed pool delete ran");
    assert!(gce.health_checks.contains_key(NODE_HC));
    assert!(gce.pools.contains_key(&names.lb));
}

#[test]
fn a_kept_check_is_not_tried_again_and_its_firewall_stays() {
    let names = Scenario::new().names();
    let observed = Observed {
        nodes_health_check: Some(HttpHealthCheck {
            name: names.nodes_health_check.clone(),
            ..Default::default()
        }),
        nodes_health_check_firewall: Some(Firewall {
            name: names.nodes_health_check_firewall.clone(),
            ..Default::default()
        }),
        nodes_health_check_used_elsewhere: true,
        ..Default::default()
    };
    assert_eq!(plan_delete(&names, &observed), vec![]);
    // Unknown (nothing refused yet in this sync): try it.
    let fresh = Observed {
        nodes_health_check_used_elsewhere: false,
        ..observed
    };
    assert_eq!(plan_delete(&names, &fresh).len(), 2);
}

#[test]
fn local_switch_tries_the_shared_check_only_while_our_pool_used_it() {
    let (mut gce, first, _) = two_lbs();
    let local = first.clone().etp_local(30500);
    let applied = gce.converge(&local, 3).expect("switch settles");
    assert_eq!(
        applied.iter().filter(|a| **a == shared_delete()).count(),
        1,
        "tried once, kept: {applied:#?}"
    );
    assert_eq!(gce.kept, 1);
    // Later syncs of the Local LB leave the shared check alone.
    let names = local.names();
    let plan = local.ensure(&gce.observed(&names, None)).expect("valid");
    assert_eq!(plan.actions, vec![]);
    assert!(gce.pools[&names.lb].health_checks[0].ends_with(&names.local_health_check));
}

#[test]
fn every_action_names_the_collection_it_touches() {
    let pool = || "a1".to_owned();
    let cases = [
        (Action::DeleteAddress { name: pool() }, "addresses/a1"),
        (Action::DeleteFirewall { name: "f".into() }, "firewalls/f"),
        (
            Action::DeleteHealthCheck {
                name: "h".into(),
                keep_if_in_use: true,
            },
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
