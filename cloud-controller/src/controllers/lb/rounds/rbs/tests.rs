//! The RBS NetLB's rounds against an in-memory GCE, through the driver the other kinds use:
//! creation and convergence, teardown leaving nothing (or what another LB keeps), a failed call
//! mid-way finished by the next sync, and the target pool <-> RBS switch with nothing leaked.

use k8s_openapi::api::core::v1::Node;

use super::super::RbsObservation;
use super::super::RoundsFailed;
use super::super::external::{EnsureInput, Ensured, delete_rounds, ensure_rounds};
use super::super::internal::{IlbEnsured, IlbInput, ensure_ilb_rounds};
use super::{RbsEnsured, RbsInput, delete_rbs_rounds, ensure_rbs_rounds};
use crate::controllers::lb::shared_hc::SharedHc;
use crate::gce::error::GceError;
use crate::lb;
use crate::lb::internal::IlbSpec;
use crate::lb::spec::LbSpec;
use crate::naming::IlbNames;
use crate::naming::l4::{L4Namer, RbsNames};
use crate::objects::SCHEME_EXTERNAL;
use crate::testutil::fake_lb_gce::Events;
use crate::testutil::{FakeLbGce, MiniGce, Scenario};

const OTHER_UID: &str = "99999999-0000-0000-0000-000000000000";

fn rbs(s: Scenario) -> Scenario {
    s.annotation("cloud.google.com/l4-rbs", "enabled")
}

fn names(s: &Scenario) -> RbsNames {
    let m = &s.service.metadata;
    let uid = m.uid.as_deref().unwrap_or_default();
    let (ns, name) = (
        m.namespace.as_deref().unwrap_or(""),
        m.name.as_deref().unwrap_or(""),
    );
    RbsNames::new(
        &L4Namer::new("kube-system-uid"),
        &s.cfg.cluster_id,
        (ns, name, uid),
        "svc",
    )
    .expect("names")
}

fn node_list(s: &Scenario) -> impl Fn() -> Vec<Node> + Sync + use<> {
    let nodes = s.nodes.clone();
    move || nodes.clone()
}

async fn ensure(
    gce: &FakeLbGce,
    events: &Events,
    s: &Scenario,
) -> Result<RbsEnsured, RoundsFailed<RbsObservation>> {
    let spec = LbSpec::from_service_mixed(&s.service).expect("valid Service");
    let names = names(s);
    let nodes = node_list(s);
    let input = RbsInput {
        spec: &spec,
        names: &names,
        cfg: &s.cfg,
        nodes: &nodes,
    };
    ensure_rbs_rounds(gce, events, input).await
}

async fn delete(gce: &FakeLbGce, s: &Scenario, announce: bool) -> bool {
    let end = delete_rbs_rounds(gce, &Events::default(), &names(s), &s.cfg, announce).await;
    end.expect("deleted")
}

fn converged(end: &Result<RbsEnsured, RoundsFailed<RbsObservation>>) -> bool {
    matches!(end, Ok(RbsEnsured::Converged { .. }))
}

/// Nothing left but the counters.
fn empty(left: &MiniGce) -> MiniGce {
    MiniGce {
        next_ip: left.next_ip,
        calls: left.calls,
        ..MiniGce::default()
    }
}

#[tokio::test]
async fn a_new_rbs_netlb_is_built_announced_once_and_converges() {
    let s = rbs(Scenario::new()).add_node("node-b", "us-central1-b");
    let (gce, events) = (FakeLbGce::default(), Events::default());
    let end = ensure(&gce, &events, &s).await;
    let Ok(RbsEnsured::Converged {
        plan,
        desired,
        announced,
        ..
    }) = end
    else {
        panic!("not converged: {end:?}");
    };
    assert_eq!(
        gce.call_labels(),
        [
            "create_instance_group",
            "add_group_instances",
            "create_instance_group",
            "add_group_instances",
            "create_region_hc",
            "create_backend_service",
            "create_address",
            "create_forwarding_rule",
            "create_firewall",
            "create_firewall",
            "delete_address",
        ]
    );
    assert_eq!(events.reasons(), [lb::EVENT_ENSURING]);
    assert!(announced);
    let st = gce.state();
    let n = names(&s);
    let ip = plan.ingress_ip.clone().expect("ingress IP");
    let rule = &st.forwarding_rules[&n.lb];
    assert_eq!(
        (rule.ip_address.as_str(), rule.load_balancing_scheme.as_str()),
        (ip.as_str(), SCHEME_EXTERNAL)
    );
    assert!(
        rule.target.is_empty()
            && rule
                .backend_service
                .ends_with(&format!("/backendServices/{}", n.backend))
    );
    let bs = &st.backend_services[&n.backend];
    assert_eq!(bs.load_balancing_scheme, SCHEME_EXTERNAL);
    assert_eq!(bs.backends.len(), 2);
    assert!(st.region_health_checks.contains_key(&n.shared_health_check));
    assert!(st.health_checks_v1.is_empty() && st.pools.is_empty() && st.addresses.is_empty());
    assert_eq!(
        desired.backend_service.health_checks,
        [s.cfg.region_health_check_url(&n.shared_health_check)]
    );
    // A second sync only reads.
    let again = FakeLbGce::new(st);
    let end = ensure(&again, &Events::default(), &s).await;
    assert!(
        matches!(end, Ok(RbsEnsured::Converged { announced: false, .. })),
        "{end:?}"
    );
    assert!(again.call_labels().is_empty());
}

#[tokio::test]
async fn no_nodes_is_invalid_before_any_read() {
    let s = rbs(Scenario::new()).with_nodes(Vec::new());
    let gce = FakeLbGce::default();
    let end = ensure(&gce, &Events::default(), &s).await;
    assert!(matches!(end, Ok(RbsEnsured::Invalid(_))), "{end:?}");
    assert!(gce.reads().is_empty() && gce.call_labels().is_empty());
}

#[tokio::test]
async fn teardown_leaves_nothing_and_a_second_teardown_does_nothing() {
    let s = rbs(Scenario::new()).etp_local(30123);
    let gce = FakeLbGce::default();
    assert!(converged(&ensure(&gce, &Events::default(), &s).await));
    assert!(!gce.state().region_health_checks.is_empty());
    let events = Events::default();
    let end = delete_rbs_rounds(&gce, &events, &names(&s), &s.cfg, true).await;
    assert!(end.expect("deleted"));
    assert_eq!(events.reasons(), [lb::EVENT_DELETING]);
    let left = gce.state();
    assert_eq!(left, empty(&left));
    assert!(!delete(&gce, &s, true).await);
}

#[tokio::test]
async fn a_failed_call_mid_way_is_finished_by_the_next_sync_and_teardown_leaks_nothing() {
    let s = rbs(Scenario::new());
    let gce = FakeLbGce::default();
    *gce.fail_call.lock().expect("lock") = Some((
        "create_forwarding_rule",
        GceError::new("insert", "503 backendError"),
    ));
    let end = ensure(&gce, &Events::default(), &s).await;
    let Err(failed) = end else {
        panic!("the injected failure did not fail the sync: {end:?}")
    };
    assert!(failed.obs.is_some());
    // The address was reserved, the rule not made: the next sync finishes on the same IP.
    let reserved = gce.state().addresses[&names(&s).lb].address.clone();
    let end = ensure(&gce, &Events::default(), &s).await;
    let Ok(RbsEnsured::Converged { plan, .. }) = end else {
        panic!("{end:?}")
    };
    assert_eq!(plan.ingress_ip, reserved);
    assert!(delete(&gce, &s, true).await);
    let left = gce.state();
    assert_eq!(left, empty(&left));
}

#[tokio::test]
async fn two_rbs_share_the_check_and_groups_and_the_first_teardown_keeps_them() {
    let first = rbs(Scenario::new());
    let mut second = rbs(Scenario::new().name("default", "second"));
    second.service.metadata.uid = Some(OTHER_UID.into());
    let gce = FakeLbGce::default();
    assert!(converged(&ensure(&gce, &Events::default(), &first).await));
    assert!(converged(&ensure(&gce, &Events::default(), &second).await));
    assert_eq!(gce.state().region_health_checks.len(), 1);
    assert!(delete(&gce, &first, true).await);
    let st = gce.state();
    let n2 = names(&second);
    assert_eq!(st.backend_services.keys().collect::<Vec<_>>(), [&n2.backend]);
    assert!(st.region_health_checks.contains_key(&n2.shared_health_check));
    assert!(st.firewalls.contains_key(&n2.shared_health_check_firewall));
    assert_eq!(st.instance_groups.len(), 1);
    assert!(delete(&gce, &second, true).await);
    let left = gce.state();
    assert_eq!(left, empty(&left));
}

#[tokio::test]
async fn rbs_teardown_keeps_the_groups_an_internal_lb_uses() {
    let s = rbs(Scenario::new());
    let mut ilb = Scenario::new()
        .name("default", "internal")
        .annotation("networking.gke.io/load-balancer-type", "Internal");
    ilb.service.metadata.uid = Some(OTHER_UID.into());
    let gce = FakeLbGce::default();
    assert!(converged(&ensure(&gce, &Events::default(), &s).await));
    let spec = IlbSpec::from_service(&ilb.service).expect("ILB");
    let ilb_names = IlbNames::new(OTHER_UID, &ilb.cfg.cluster_id, "svc").expect("names");
    let nodes = node_list(&ilb);
    let input = IlbInput {
        svc: &ilb.service,
        spec: &spec,
        names: &ilb_names,
        cfg: &ilb.cfg,
        nodes: &nodes,
    };
    let end = ensure_ilb_rounds(&gce, &Events::default(), input).await;
    assert!(matches!(end, Ok(IlbEnsured::Converged { .. })), "{end:?}");
    assert!(delete(&gce, &s, true).await);
    let st = gce.state();
    assert_eq!(st.instance_groups.len(), 1, "the ILB's group must stay");
    assert!(st.region_health_checks.is_empty());
    assert_eq!(st.backend_services.keys().collect::<Vec<_>>(), [&ilb_names.lb]);
    assert_eq!(st.forwarding_rules.keys().collect::<Vec<_>>(), [&ilb_names.lb]);
}

async fn ensure_tp(gce: &FakeLbGce, s: &Scenario) -> Ensured {
    let names = s.names();
    let nodes = node_list(s);
    let input = EnsureInput {
        svc: &s.service,
        names: &names,
        cfg: &s.cfg,
        fresh: false,
        nodes: &nodes,
    };
    ensure_rounds(gce, &Events::default(), &SharedHc::default(), input)
        .await
        .expect("target pool LB")
}

#[tokio::test]
async fn target_pool_to_rbs_and_back_leaks_nothing() {
    let tp = Scenario::new();
    let to_rbs = rbs(tp.clone());
    let gce = FakeLbGce::default();
    assert!(matches!(ensure_tp(&gce, &tp).await, Ensured::Converged { .. }));
    // Target pool -> RBS: the target-pool LB goes first (the step order), then RBS is built.
    let shared = SharedHc::default();
    assert!(
        delete_rounds(&gce, &Events::default(), &shared, &tp.names(), true)
            .await
            .expect("deleted")
    );
    assert!(converged(&ensure(&gce, &Events::default(), &to_rbs).await));
    let st = gce.state();
    assert!(
        st.pools.is_empty() && st.health_checks.is_empty(),
        "target-pool objects left: {st:#?}"
    );
    let n = names(&to_rbs);
    let mut fws: Vec<&String> = st.firewalls.keys().collect();
    fws.sort();
    let mut want = vec![&n.backend, &n.shared_health_check_firewall];
    want.sort();
    assert_eq!(fws, want);
    // A target-pool LB's teardown leaves the RBS rule of the same name alone.
    assert!(
        !delete_rounds(&gce, &Events::default(), &shared, &tp.names(), true)
            .await
            .expect("nothing")
    );
    assert!(gce.state().forwarding_rules.contains_key(&n.lb));
    // RBS -> target pool: RBS goes first, then the target pool is built.
    assert!(delete(&gce, &to_rbs, false).await);
    assert!(matches!(ensure_tp(&gce, &tp).await, Ensured::Converged { .. }));
    let st = gce.state();
    assert!(
        st.region_health_checks.is_empty() && st.backend_services.is_empty() && st.instance_groups.is_empty()
    );
    assert!(
        !st.firewalls.contains_key(&n.backend) && !st.firewalls.contains_key(&n.shared_health_check_firewall)
    );
    // The RBS teardown leaves the target-pool rule of the same name alone.
    assert!(!delete(&gce, &to_rbs, true).await);
    assert!(gce.state().pools.contains_key(&tp.names().lb));
    assert!(
        delete_rounds(&gce, &Events::default(), &shared, &tp.names(), false)
            .await
            .expect("deleted")
    );
    let left = gce.state();
    assert_eq!(left, empty(&left));
}

#[tokio::test]
async fn teardown_of_a_dual_stack_netlb_removes_both_families() {
    let s = rbs(Scenario::new()).ip_families(&["IPv4", "IPv6"]);
    let gce = FakeLbGce::default();
    assert!(converged(&ensure(&gce, &Events::default(), &s).await));
    // The IPv6 half as ingress-gce builds it: its rule holds the backend service in use.
    let n = names(&s);
    let mut state = gce.state();
    let v4_rule = state.forwarding_rules.get(&n.lb).cloned().expect("IPv4 rule");
    state.forwarding_rules.insert(
        n.ipv6.rule.clone(),
        crate::objects::ForwardingRule {
            name: n.ipv6.rule.clone(),
            ip_address: "2600:1900:4000:1::/96".into(),
            ip_version: "IPV6".into(),
            ..v4_rule
        },
    );
    let v4_fw = state.firewalls.get(&n.backend).cloned().expect("IPv4 firewall");
    state.firewalls.insert(
        n.ipv6.firewall.clone(),
        crate::objects::Firewall {
            name: n.ipv6.firewall.clone(),
            ..v4_fw
        },
    );
    let gce = FakeLbGce::new(state);
    assert!(delete(&gce, &s, true).await);
    let left = gce.state();
    assert_eq!(left, empty(&left));
    assert!(!delete(&gce, &s, true).await);
}
