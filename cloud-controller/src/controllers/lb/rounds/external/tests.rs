//! The external LB's round loops against an in-memory GCE: what is called, in which order, what
//! is read, which events are announced, and how failures and limits end a sync.

use k8s_openapi::api::core::v1::Node;

use super::super::{MAX_ROUNDS, RoundsFailed};
use super::{EnsureInput, Ensured, delete_rounds, ensure_rounds, touches_shared};
use crate::controllers::SyncError;
use crate::controllers::lb::shared_hc::{SharedHc, shared_keys};
use crate::gce::error::GceError;
use crate::gce::observe::ObservedLb;
use crate::lb;
use crate::objects::{Address, ForwardingRule, SCHEME_INTERNAL};
use crate::testutil::fake_lb_gce::Events;
use crate::testutil::{FakeLbGce, MiniGce, Scenario};

async fn ensure_with(
    gce: &FakeLbGce,
    events: &Events,
    shared: &SharedHc,
    s: &Scenario,
    fresh: bool,
) -> Result<Ensured, RoundsFailed<ObservedLb>> {
    let names = s.names();
    let nodes = s.nodes.clone();
    let node_list = move || -> Vec<Node> { nodes.clone() };
    let input = EnsureInput {
        svc: &s.service,
        names: &names,
        cfg: &s.cfg,
        fresh,
        nodes: &node_list,
    };
    ensure_rounds(gce, events, shared, input).await
}

async fn ensure(
    gce: &FakeLbGce,
    events: &Events,
    s: &Scenario,
    fresh: bool,
) -> Result<Ensured, RoundsFailed<ObservedLb>> {
    ensure_with(gce, events, &SharedHc::default(), s, fresh).await
}

/// A GCE holding the converged LB of `s`.
async fn built(s: &Scenario) -> MiniGce {
    let gce = FakeLbGce::default();
    let end = ensure(&gce, &Events::default(), s, false).await;
    assert!(matches!(end, Ok(Ensured::Converged { .. })), "{end:?}");
    gce.state()
}

#[tokio::test]
async fn a_new_lb_is_built_in_order_announced_once_and_converges() {
    let s = Scenario::new();
    let (gce, events) = (FakeLbGce::default(), Events::default());
    let end = ensure(&gce, &events, &s, false).await;
    let Ok(Ensured::Converged { plan, obs, announced }) = end else {
        panic!("not converged: {end:?}");
    };
    // Address first (its IP is needed), the firewalls and the check in one stage, then pool,
    // rule, and the reservation released last.
    let mut calls = gce.call_labels();
    calls[1..4].sort_unstable();
    assert_eq!(
        calls,
        [
            "create_address",
            "create_firewall",
            "create_firewall",
            "create_health_check",
            "create_target_pool",
            "create_forwarding_rule",
            "delete_address",
        ]
    );
    assert_eq!(events.reasons(), [lb::EVENT_ENSURING]);
    assert_eq!(announced, Some(false));
    assert_eq!(plan.ingress_ip.as_deref(), Some("203.0.113.1"));
    assert_eq!(
        obs.observed.forwarding_rule.map(|f| f.ip_address).as_deref(),
        Some("203.0.113.1")
    );
    // The plan creating the shared check re-read it under the lock before running.
    let reads = gce.reads();
    assert_eq!(reads[0], None);
    assert!(reads.contains(&Some(shared_keys(&s.names()))), "{reads:?}");
}

#[tokio::test]
async fn a_converged_lb_is_only_read() {
    let s = Scenario::new();
    let gce = FakeLbGce::new(built(&s).await);
    let events = Events::default();
    let end = ensure(&gce, &events, &s, false).await;
    assert!(
        matches!(end, Ok(Ensured::Converged { announced: None, .. })),
        "{end:?}"
    );
    assert!(gce.call_labels().is_empty());
    assert!(events.reasons().is_empty());
    assert_eq!(gce.reads(), [None]);
}

#[tokio::test]
async fn a_node_join_only_adds_it_and_announces_nothing_up_front() {
    let s = Scenario::new();
    let gce = FakeLbGce::new(built(&s).await);
    let events = Events::default();
    let end = ensure(
        &gce,
        &events,
        &s.clone().add_node("node-4", "us-central1-a"),
        false,
    )
    .await;
    assert!(
        matches!(
            end,
            Ok(Ensured::Converged {
                announced: Some(true),
                ..
            })
        ),
        "{end:?}"
    );
    assert_eq!(gce.call_labels(), ["add_instances"]);
    assert!(events.reasons().is_empty());
}

#[tokio::test]
async fn a_fresh_service_reads_only_the_shared_objects_first() {
    let s = Scenario::new();
    let shared = SharedHc::default();
    let gce = FakeLbGce::default();
    let end = ensure_with(&gce, &Events::default(), &shared, &s, true).await;
    assert!(matches!(end, Ok(Ensured::Converged { .. })), "{end:?}");
    assert_eq!(gce.reads()[0], Some(shared_keys(&s.names())));
    // A sync that read the shared objects without changing them leaves them in the memory: a
    // fresh Service starting within its lifetime reads nothing of them at first.
    let again = FakeLbGce::new(gce.state());
    let end = ensure_with(&again, &Events::default(), &shared, &s, false).await;
    assert!(
        matches!(end, Ok(Ensured::Converged { announced: None, .. })),
        "{end:?}"
    );
    let mut other = Scenario::new().name("default", "other");
    other.service.metadata.uid = Some("99999999-0000-0000-0000-000000000000".into());
    let second = FakeLbGce::new(gce.state());
    let end = ensure_with(&second, &Events::default(), &shared, &other, true).await;
    assert!(matches!(end, Ok(Ensured::Converged { .. })), "{end:?}");
    assert_eq!(second.reads()[0], Some(Default::default()));
    assert!(!second.call_labels().contains(&"create_health_check"));
}

#[tokio::test]
async fn a_service_without_eligible_nodes_makes_no_call() {
    let s = Scenario::new().with_nodes(Vec::new());
    let (gce, events) = (FakeLbGce::default(), Events::default());
    let end = ensure(&gce, &events, &s, false).await;
    assert!(matches!(end, Ok(Ensured::Invalid(_))), "{end:?}");
    assert!(gce.call_labels().is_empty());
    assert!(events.reasons().is_empty());
}

#[tokio::test]
async fn a_forwarding_rule_on_a_backend_service_is_left_alone() {
    let s = Scenario::new();
    let mut mini = MiniGce::default();
    let rule = ForwardingRule {
        name: s.names().lb,
        backend_service: "regions/us-central1/backendServices/x".into(),
        ..ForwardingRule::default()
    };
    mini.forwarding_rules.insert(rule.name.clone(), rule);
    let gce = FakeLbGce::new(mini);
    let end = ensure(&gce, &Events::default(), &s, false).await;
    assert!(matches!(end, Ok(Ensured::ImplementedElsewhere)), "{end:?}");
    assert!(gce.call_labels().is_empty());
}

#[tokio::test]
async fn a_failed_call_ends_the_sync_after_its_stage_with_the_observation() {
    let s = Scenario::new();
    let gce = FakeLbGce::default();
    *gce.fail_call.lock().expect("lock") = Some(("create_target_pool", GceError::new("insert", "503")));
    let end = ensure(&gce, &Events::default(), &s, false).await;
    let Err(RoundsFailed {
        error: SyncError::Gce(_),
        obs: Some(_),
    }) = end
    else {
        panic!("expected a GCE failure with the observation: {end:?}");
    };
    assert_eq!(gce.call_labels().last(), Some(&"create_target_pool"));
    assert!(gce.state().forwarding_rules.is_empty());
}

#[tokio::test]
async fn a_failed_read_ends_the_sync_without_an_observation() {
    let gce = FakeLbGce::default();
    *gce.fail_read.lock().expect("lock") = Some(GceError::new("get", "503"));
    let end = ensure(&gce, &Events::default(), &Scenario::new(), false).await;
    assert!(
        matches!(
            end,
            Err(RoundsFailed {
                error: SyncError::Gce(_),
                obs: None
            })
        ),
        "{end:?}"
    );
    assert!(gce.call_labels().is_empty());
}

#[tokio::test]
async fn a_plan_that_never_empties_stops_after_the_round_limit() {
    let s = Scenario::new();
    let gce = FakeLbGce {
        lossy: Some("patch_firewall"),
        ..FakeLbGce::new(built(&s).await)
    };
    let changed = s.source_ranges(&["10.0.0.0/8"]);
    let end = ensure(&gce, &Events::default(), &changed, false).await;
    assert!(
        matches!(
            end,
            Err(RoundsFailed {
                error: SyncError::NotConverged(_),
                ..
            })
        ),
        "{end:?}"
    );
    assert_eq!(gce.reads().len(), MAX_ROUNDS);
}

#[tokio::test]
async fn delete_removes_everything_and_announces_once() {
    let s = Scenario::new();
    let gce = FakeLbGce::new(built(&s).await);
    let events = Events::default();
    assert!(
        delete_rounds(&gce, &events, &SharedHc::default(), &s.names(), false)
            .await
            .expect("deleted")
    );
    assert_eq!(events.reasons(), [lb::EVENT_DELETING]);
    assert_eq!(
        gce.state(),
        MiniGce {
            next_ip: 1,
            calls: gce.state().calls,
            ..MiniGce::default()
        }
    );
    // Nothing left: nothing to announce.
    let events = Events::default();
    assert!(
        !delete_rounds(&gce, &events, &SharedHc::default(), &s.names(), false)
            .await
            .expect("deleted")
    );
    assert!(events.reasons().is_empty());
}

#[tokio::test]
async fn delete_keeps_the_shared_check_another_pool_uses() {
    let first = Scenario::new();
    let mut second = Scenario::new().name("default", "second");
    second.service.metadata.uid = Some("99999999-0000-0000-0000-000000000000".into());
    let gce = FakeLbGce::new(built(&first).await);
    assert!(matches!(
        ensure(&gce, &Events::default(), &second, false).await,
        Ok(Ensured::Converged { .. })
    ));
    let deleting = FakeLbGce::new(gce.state());
    assert!(
        delete_rounds(
            &deleting,
            &Events::default(),
            &SharedHc::default(),
            &first.names(),
            false
        )
        .await
        .expect("deleted")
    );
    let left = deleting.state();
    let names = first.names();
    assert!(left.health_checks.contains_key(&names.nodes_health_check));
    assert!(left.firewalls.contains_key(&names.nodes_health_check_firewall));
    assert!(!left.pools.contains_key(&names.lb));
    assert!(left.pools.contains_key(&second.names().lb));
    let tries = deleting
        .call_labels()
        .iter()
        .filter(|l| **l == "delete_health_check")
        .count();
    assert_eq!(tries, 1, "a kept check is not tried again");
}

#[tokio::test]
async fn a_switch_to_internal_leaves_the_internal_rule_and_address() {
    let s = Scenario::new();
    let names = s.names();
    let mut mini = MiniGce::default();
    let rule = ForwardingRule {
        name: names.lb.clone(),
        load_balancing_scheme: SCHEME_INTERNAL.into(),
        ..ForwardingRule::default()
    };
    mini.forwarding_rules.insert(names.lb.clone(), rule);
    let address = Address {
        name: names.lb.clone(),
        address_type: SCHEME_INTERNAL.into(),
        ..Address::default()
    };
    mini.addresses.insert(names.lb.clone(), address);
    let gce = FakeLbGce::new(mini);
    let events = Events::default();
    assert!(
        !delete_rounds(&gce, &events, &SharedHc::default(), &names, true)
            .await
            .expect("deleted")
    );
    assert!(gce.call_labels().is_empty());
    // Not switching, the same objects are ours to delete.
    assert!(
        delete_rounds(&gce, &events, &SharedHc::default(), &names, false)
            .await
            .expect("deleted")
    );
    assert!(gce.state().forwarding_rules.is_empty());
}

#[test]
fn only_plans_that_create_or_delete_the_shared_objects_take_the_lock() {
    let s = Scenario::new();
    let names = s.names();
    let mut gce = MiniGce::default();
    let reserve = s.ensure(&gce.observed(&names, None)).expect("plan").actions;
    assert!(!touches_shared(&reserve, &names));
    gce.apply_all(&reserve).expect("reserved");
    let new_lb = s.ensure(&gce.observed(&names, None)).expect("plan").actions;
    assert!(touches_shared(&new_lb, &names));
    let own_only: Vec<_> = new_lb
        .into_iter()
        .filter(|a| {
            a.target_name() != names.nodes_health_check
                && a.target_name() != names.nodes_health_check_firewall
        })
        .collect();
    assert!(!own_only.is_empty());
    assert!(!touches_shared(&own_only, &names));
}
