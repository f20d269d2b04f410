//! The internal LB's rounds against an in-memory GCE, through the same driver as external LBs:
//! what is called, in which order, which events are announced, how kept shared objects, failures
//! and the round limit end a sync.

use k8s_openapi::api::core::v1::Node;

use super::super::{IlbObservation, MAX_ROUNDS, RoundsFailed};
use super::{IlbEnsured, IlbInput, delete_ilb_rounds, ensure_ilb_rounds};
use crate::controllers::SyncError;
use crate::gce::error::GceError;
use crate::lb;
use crate::lb::internal::IlbSpec;
use crate::lb::internal::delete::Teardown;
use crate::naming::IlbNames;
use crate::objects::{Address, ForwardingRule};
use crate::testutil::fake_lb_gce::Events;
use crate::testutil::{FakeLbGce, MiniGce, Scenario, node};

const OTHER_UID: &str = "99999999-0000-0000-0000-000000000000";

fn ilb(s: Scenario) -> Scenario {
    s.annotation("networking.gke.io/load-balancer-type", "Internal")
}

fn names(s: &Scenario) -> IlbNames {
    let uid = s.service.metadata.uid.clone().unwrap_or_default();
    IlbNames::new(&uid, &s.cfg.cluster_id, "svc").expect("names")
}

/// Two nodes in each of `zones`.
fn spread(s: Scenario, zones: &[&str]) -> Scenario {
    let nodes = zones
        .iter()
        .flat_map(|z| (1..=2).map(move |i| node(&format!("node-{z}-{i}"), z)))
        .collect();
    s.with_nodes(nodes)
}

fn second(s: Scenario) -> Scenario {
    let mut s = s.name("default", "second");
    s.service.metadata.uid = Some(OTHER_UID.into());
    s
}

async fn ensure(
    gce: &FakeLbGce,
    events: &Events,
    s: &Scenario,
) -> Result<IlbEnsured, RoundsFailed<IlbObservation>> {
    let spec = IlbSpec::from_service(&s.service).expect("valid ILB Service");
    let names = names(s);
    let nodes = s.nodes.clone();
    let node_list = move || -> Vec<Node> { nodes.clone() };
    let input = IlbInput {
        svc: &s.service,
        spec: &spec,
        names: &names,
        cfg: &s.cfg,
        nodes: &node_list,
    };
    ensure_ilb_rounds(gce, events, input).await
}

/// A GCE holding the converged LBs of `scenarios`.
async fn built(scenarios: &[&Scenario]) -> MiniGce {
    let gce = FakeLbGce::default();
    for s in scenarios {
        let end = ensure(&gce, &Events::default(), s).await;
        assert!(matches!(end, Ok(IlbEnsured::Converged { .. })), "{end:?}");
    }
    gce.state()
}

fn count(gce: &FakeLbGce, label: &str) -> usize {
    gce.call_labels().iter().filter(|l| **l == label).count()
}

#[tokio::test]
async fn a_new_ilb_is_built_in_upstream_order_announced_once_and_converges() {
    let s = spread(ilb(Scenario::new()), &["us-central1-a", "us-central1-b"]);
    let (gce, events) = (FakeLbGce::default(), Events::default());
    let end = ensure(&gce, &events, &s).await;
    let Ok(IlbEnsured::Converged { plan, obs, announced }) = end else {
        panic!("not converged: {end:?}");
    };
    // Groups with their nodes, the shared check, the address (GCE picks the IP: plan again),
    // then backend service, rule, firewalls, and the reservation released last.
    assert_eq!(
        gce.call_labels(),
        [
            "create_instance_group",
            "add_group_instances",
            "create_instance_group",
            "add_group_instances",
            "create_hc",
            "create_address",
            "create_backend_service",
            "create_forwarding_rule",
            "create_firewall",
            "create_firewall",
            "delete_address",
        ]
    );
    assert_eq!(events.reasons(), [lb::EVENT_ENSURING]);
    assert!(announced);
    assert_eq!(plan.ingress_ip.as_deref(), Some("10.128.0.1"));
    assert_eq!(
        obs.0.forwarding_rule.map(|f| f.ip_address).as_deref(),
        Some("10.128.0.1")
    );
    assert_eq!(gce.reads().len(), 3);
    assert!(gce.state().addresses.is_empty());
}

#[tokio::test]
async fn a_converged_ilb_is_only_read() {
    let s = ilb(Scenario::new());
    let gce = FakeLbGce::new(built(&[&s]).await);
    let events = Events::default();
    let end = ensure(&gce, &events, &s).await;
    assert!(
        matches!(end, Ok(IlbEnsured::Converged { announced: false, .. })),
        "{end:?}"
    );
    assert!(gce.call_labels().is_empty());
    assert!(events.reasons().is_empty());
    assert_eq!(gce.reads(), [None]);
}

#[tokio::test]
async fn a_node_join_only_adds_it_to_its_zones_group() {
    let s = ilb(Scenario::new());
    let gce = FakeLbGce::new(built(&[&s]).await);
    let events = Events::default();
    let end = ensure(&gce, &events, &s.clone().add_node("node-4", "us-central1-a")).await;
    assert!(
        matches!(end, Ok(IlbEnsured::Converged { announced: true, .. })),
        "{end:?}"
    );
    assert_eq!(gce.call_labels(), ["add_group_instances"]);
    assert_eq!(events.reasons(), [lb::EVENT_ENSURING]);
}

#[tokio::test]
async fn a_service_without_eligible_nodes_makes_no_read_and_no_call() {
    let s = ilb(Scenario::new()).with_nodes(Vec::new());
    let (gce, events) = (FakeLbGce::default(), Events::default());
    let end = ensure(&gce, &events, &s).await;
    assert!(
        matches!(end, Ok(IlbEnsured::Invalid(crate::Error::NoEligibleNodes { .. }))),
        "{end:?}"
    );
    assert!(gce.reads().is_empty());
    assert!(gce.call_labels().is_empty());
    assert!(events.reasons().is_empty());
}

#[tokio::test]
async fn a_failed_call_ends_the_sync_after_its_stage_with_the_observation() {
    let s = ilb(Scenario::new());
    let gce = FakeLbGce::default();
    *gce.fail_call.lock().expect("lock") = Some(("create_backend_service", GceError::new("insert", "503")));
    let end = ensure(&gce, &Events::default(), &s).await;
    let Err(RoundsFailed {
        error: SyncError::Gce(_),
        obs: Some(_),
    }) = end
    else {
        panic!("expected a GCE failure with the observation: {end:?}");
    };
    assert_eq!(gce.call_labels().last(), Some(&"create_backend_service"));
    assert!(gce.state().forwarding_rules.is_empty());
}

#[tokio::test]
async fn a_failed_read_ends_the_sync_without_an_observation() {
    let gce = FakeLbGce::default();
    *gce.fail_read.lock().expect("lock") = Some(GceError::new("get", "503"));
    let end = ensure(&gce, &Events::default(), &ilb(Scenario::new())).await;
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
    let s = ilb(Scenario::new());
    let gce = FakeLbGce {
        lossy: Some("patch_firewall"),
        ..FakeLbGce::new(built(&[&s]).await)
    };
    let changed = s.source_ranges(&["10.0.0.0/8"]);
    let end = ensure(&gce, &Events::default(), &changed).await;
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
async fn a_switch_to_the_services_own_check_keeps_the_shared_one_another_ilb_uses() {
    let first = ilb(Scenario::new());
    let other = second(ilb(Scenario::new()));
    let gce = FakeLbGce::new(built(&[&first, &other]).await);
    let local = first.clone().etp_local(31000);
    let end = ensure(&gce, &Events::default(), &local).await;
    assert!(matches!(end, Ok(IlbEnsured::Converged { .. })), "{end:?}");
    let left = gce.state();
    let n = names(&first);
    assert!(left.health_checks_v1.contains_key(&n.nodes_health_check));
    assert!(left.firewalls.contains_key(&n.nodes_health_check_firewall));
    assert!(left.health_checks_v1.contains_key(&n.local_health_check));
    assert_eq!(count(&gce, "delete_hc"), 1, "a kept check is not tried again");
}

#[tokio::test]
async fn delete_removes_everything_and_announces_once() {
    let s = spread(ilb(Scenario::new()), &["us-central1-a", "us-central1-b"]);
    let gce = FakeLbGce::new(built(&[&s]).await);
    let events = Events::default();
    let deleted = delete_ilb_rounds(&gce, &events, &names(&s), Teardown::All).await;
    assert!(deleted.expect("deleted"));
    assert_eq!(events.reasons(), [lb::EVENT_DELETING]);
    let left = gce.state();
    assert_eq!(
        left,
        MiniGce {
            next_ip: left.next_ip,
            calls: left.calls,
            ..MiniGce::default()
        }
    );
    let events = Events::default();
    let again = delete_ilb_rounds(&gce, &events, &names(&s), Teardown::All).await;
    assert!(!again.expect("deleted"));
    assert!(events.reasons().is_empty());
}

/// Beside another internal LB, GCE keeps the shared check, then each zone's shared group in
/// turn: each kept delete ends its plan, so the teardown takes 1 + zones + 1 rounds, more than
/// [`MAX_ROUNDS`] in a four-zone region (us-central1: a, b, c, f).
#[tokio::test]
async fn delete_beside_another_ilb_keeps_the_shared_objects_in_every_zone() {
    let zones = ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"];
    let first = spread(ilb(Scenario::new()), &zones);
    let other = second(first.clone());
    let gce = FakeLbGce::new(built(&[&first, &other]).await);
    let n = names(&first);
    let deleted = delete_ilb_rounds(&gce, &Events::default(), &n, Teardown::All).await;
    assert!(deleted.expect("deleted"));
    assert_eq!(gce.reads().len(), 1 + zones.len() + 1);
    let left = gce.state();
    assert_eq!(left.instance_groups.len(), zones.len());
    assert!(left.health_checks_v1.contains_key(&n.nodes_health_check));
    assert!(left.firewalls.contains_key(&n.nodes_health_check_firewall));
    assert!(!left.backend_services.contains_key(&n.lb));
    assert!(left.backend_services.contains_key(&names(&other).lb));
    assert_eq!(count(&gce, "delete_instance_group"), zones.len());
    assert_eq!(count(&gce, "delete_hc"), 1);
}

#[tokio::test]
async fn a_switch_to_external_leaves_the_external_rule_and_address_unannounced() {
    let s = ilb(Scenario::new());
    let n = names(&s);
    let mut mini = built(&[&s]).await;
    // The external LB of the same names: its rule (scheme EXTERNAL, empty) and address.
    let rule = ForwardingRule {
        name: n.lb.clone(),
        target: "regions/us-central1/targetPools/x".into(),
        ..ForwardingRule::default()
    };
    mini.forwarding_rules.insert(n.lb.clone(), rule);
    let address = Address {
        name: n.lb.clone(),
        address: Some("203.0.113.9".into()),
        ..Address::default()
    };
    mini.addresses.insert(n.lb.clone(), address);
    let gce = FakeLbGce::new(mini);
    let events = Events::default();
    let deleted = delete_ilb_rounds(&gce, &events, &n, Teardown::InternalOnly).await;
    assert!(deleted.expect("deleted"));
    assert!(events.reasons().is_empty());
    let left = gce.state();
    assert!(left.forwarding_rules.contains_key(&n.lb));
    assert!(left.addresses.contains_key(&n.lb));
    assert!(left.backend_services.is_empty());
    assert!(left.instance_groups.is_empty());
}
