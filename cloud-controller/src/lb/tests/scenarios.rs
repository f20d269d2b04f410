//! End-to-end planner scenarios: plan -> apply to MiniGce -> re-plan.

use crate::config::EtpTransition;
use crate::lb::external::delete::plan_delete;
use crate::lb::spec::NETWORK_TIER_ANNOTATION;
use crate::objects::action::Action;
use crate::objects::observed::Observed;
use crate::objects::{AFFINITY_CLIENT_IP, TIER_PREMIUM, TIER_STANDARD};
use crate::testutil::{MiniGce, Scenario, labels};

const LB: &str = "a4f6b2c1e9a3d4b8e8c7f0123456789a";
const NODE_HC: &str = "k8s-0123456789abcdef-node";

/// A converged LB for `s`, and the actions it took to get there.
fn built(s: &Scenario) -> (MiniGce, Vec<Action>) {
    let mut gce = MiniGce::default();
    let applied = gce.converge(s, 3).expect("converges");
    (gce, applied)
}

fn replan(gce: &MiniGce, s: &Scenario) -> Vec<Action> {
    s.ensure(&gce.observed(&s.names(), s.requested_ip().as_deref()))
        .expect("valid")
        .actions
}

#[test]
fn new_lb_takes_seven_calls_in_design_order() {
    let s = Scenario::new();
    let first = s.ensure(&Observed::default()).unwrap();
    assert!(first.replan, "the IP is unknown until the address exists");
    assert_eq!(labels(&first.actions), ["create_address"]);

    let (gce, applied) = built(&s);
    assert_eq!(
        labels(&applied),
        [
            "create_address",
            "create_firewall",
            "create_firewall",
            "create_health_check",
            "create_target_pool",
            "create_forwarding_rule",
            "delete_address"
        ]
    );
    assert!(applied.len() <= 8);

    // The reservation is released once the forwarding rule holds the IP (upstream's
    // isSafeToReleaseIP in gce_loadbalancer_external.go): no static address quota is used.
    assert!(gce.addresses.is_empty(), "{:?}", gce.addresses);
    let Some(Action::CreateForwardingRule(created)) = applied.get(5) else {
        panic!("{applied:?}");
    };
    let ip = created.ip_address.clone();
    let fr = &gce.forwarding_rules[LB];
    assert_eq!(fr.ip_address, ip);
    assert_eq!(
        (fr.ip_protocol.as_str(), fr.port_range.as_str()),
        ("TCP", "80-80")
    );
    assert_eq!(fr.network_tier, TIER_PREMIUM);
    assert_eq!(
        fr.target,
        format!("https://www.googleapis.com/compute/v1/projects/proj/regions/us-central1/targetPools/{LB}")
    );
    assert_eq!(fr.description, r#"{"kubernetes.io/service-name":"default/web"}"#);

    let fw = &gce.firewalls[&format!("k8s-fw-{LB}")];
    assert_eq!(fw.source_ranges, ["0.0.0.0/0"]);
    assert_eq!(fw.destination_ranges, [ip.as_str()]);
    assert_eq!(fw.target_tags, ["svcnet-node"]);
    assert_eq!(
        (fw.allowed[0].ip_protocol.as_str(), fw.allowed[0].ports.clone()),
        ("tcp", vec!["80".to_string()])
    );
    assert_eq!(
        fw.description,
        format!(r#"{{"kubernetes.io/service-name":"default/web", "kubernetes.io/service-ip":"{ip}"}}"#)
    );

    let hc = &gce.health_checks[NODE_HC];
    assert_eq!(
        (hc.port, hc.request_path.as_str(), hc.check_interval_sec),
        (10256, "/healthz", 8)
    );
    let hc_fw = &gce.firewalls[&format!("{NODE_HC}-http-hc")];
    assert_eq!(hc_fw.source_ranges.len(), 4);
    assert_eq!(hc_fw.allowed[0].ports, ["10256"]);
    assert_eq!(
        hc_fw.description,
        r#"{"kubernetes.io/cluster-id":"0123456789abcdef"}"#
    );

    let pool = &gce.pools[LB];
    assert_eq!(pool.instances.len(), 3);
    assert_eq!(pool.session_affinity, "NONE");
    assert!(pool.health_checks[0].ends_with(&format!("/global/httpHealthChecks/{NODE_HC}")));
}

#[test]
fn no_op_resync_plans_nothing() {
    let s = Scenario::new()
        .ports("UDP", &[53, 54, 60])
        .source_ranges(&["10.0.0.0/8"]);
    let (gce, _) = built(&s);
    assert_eq!(replan(&gce, &s), vec![]);
    let local = Scenario::new().etp_local(30123).affinity("ClientIP");
    let (gce, _) = built(&local);
    assert_eq!(replan(&gce, &local), vec![]);
}

#[test]
fn node_added_and_removed_only_touch_instances() {
    let s = Scenario::new();
    let (gce, _) = built(&s);
    let grown = s.clone().add_node("node-4", "us-central1-b");
    let actions = replan(&gce, &grown);
    assert_eq!(
        actions,
        [Action::AddInstances {
            pool: LB.into(),
            instances: vec![
                "https://www.googleapis.com/compute/v1/projects/proj/zones/us-central1-b/instances/node-4"
                    .into()
            ],
        }]
    );
    let shrunk = s.remove_node("node-2");
    let actions = replan(&gce, &shrunk);
    assert_eq!(labels(&actions), ["remove_instances"]);
    assert!(
        matches!(&actions[0], Action::RemoveInstances { instances, .. } if instances.len() == 1 && instances[0].ends_with("/node-2"))
    );
}

#[test]
fn instances_go_in_batches() {
    let mut s = Scenario::new();
    s.cfg.create_instances_max = 2;
    s.cfg.instance_batch = 2;
    for i in 4..=7 {
        s = s.add_node(&format!("node-{i}"), "us-central1-c");
    }
    let (gce, applied) = built(&s);
    let create = applied.iter().find_map(|a| match a {
        Action::CreateTargetPool(p) => Some(p.instances.len()),
        _ => None,
    });
    assert_eq!(create, Some(2), "insert carries create_instances_max members");
    let adds: Vec<usize> = applied
        .iter()
        .filter_map(|a| match a {
            Action::AddInstances { instances, .. } => Some(instances.len()),
            _ => None,
        })
        .collect();
    assert_eq!(adds, [2, 2, 1]);
    assert_eq!(gce.pools[LB].instances.len(), 7);
}

#[test]
fn port_change_patches_firewall_and_recreates_only_the_forwarding_rule() {
    let s = Scenario::new();
    let (mut gce, _) = built(&s);
    let ip = gce.forwarding_rules[LB].ip_address.clone();
    let changed = s.ports("TCP", &[80, 443]);
    let actions = replan(&gce, &changed);
    assert_eq!(
        labels(&actions),
        // The ephemeral IP is promoted to a reservation before the forwarding rule goes and
        // released once the new one holds it (upstream's critical section).
        [
            "create_address",
            "patch_firewall",
            "delete_forwarding_rule",
            "create_forwarding_rule",
            "delete_address"
        ]
    );
    let Some(Action::CreateAddress(promoted)) = actions.first() else {
        panic!("{actions:?}");
    };
    assert_eq!(promoted.address.as_deref(), Some(ip.as_str()));
    gce.apply_all(&actions).unwrap();
    assert_eq!(gce.forwarding_rules[LB].port_range, "80-443");
    assert_eq!(
        gce.forwarding_rules[LB].ip_address, ip,
        "the reservation kept the IP"
    );
    assert!(gce.addresses.is_empty());
    assert_eq!(
        gce.firewalls[&format!("k8s-fw-{LB}")].allowed[0].ports,
        ["80", "443"]
    );
    assert_eq!(replan(&gce, &changed), vec![]);
}

#[test]
fn etp_cluster_to_local_swaps_health_check_by_recreating_pool_like_upstream() {
    let s = Scenario::new();
    let (mut gce, _) = built(&s);
    let local = s.clone().etp_local(30500);
    let actions = replan(&gce, &local);
    assert_eq!(
        labels(&actions),
        [
            "create_address",
            "create_firewall",
            "create_health_check",
            "delete_forwarding_rule",
            "delete_target_pool",
            "create_target_pool",
            "create_forwarding_rule",
            "delete_health_check",
            "delete_firewall",
            "delete_address"
        ]
    );
    gce.apply_all(&actions).unwrap();
    assert!(gce.pools[LB].health_checks[0].ends_with(&format!("/httpHealthChecks/{LB}")));
    assert_eq!(gce.health_checks[LB].port, 30500);
    assert!(
        !gce.health_checks.contains_key(NODE_HC),
        "unused shared check removed"
    );
    assert_eq!(
        gce.firewalls[&format!("k8s-{LB}-http-hc")].allowed[0].ports,
        ["30500"]
    );
    assert_eq!(replan(&gce, &local), vec![]);

    // And back: the service check and its firewall go, the shared one returns.
    let s = local.etp_cluster();
    let actions = replan(&gce, &s);
    gce.apply_all(&actions).unwrap();
    assert!(gce.health_checks.contains_key(NODE_HC));
    assert!(!gce.health_checks.contains_key(LB));
    assert!(!gce.firewalls.contains_key(&format!("k8s-{LB}-http-hc")));
    assert_eq!(replan(&gce, &s), vec![]);
}

#[test]
fn etp_change_in_place_keeps_pool_and_forwarding_rule() {
    let mut s = Scenario::new();
    s.cfg.etp_transition = EtpTransition::SwapInPlace;
    let (mut gce, _) = built(&s);
    let local = s.clone().etp_local(30500);
    let actions = replan(&gce, &local);
    assert_eq!(
        labels(&actions),
        [
            "create_firewall",
            "create_health_check",
            "remove_health_check",
            "add_health_check",
            "delete_health_check",
            "delete_firewall"
        ]
    );
    gce.apply_all(&actions).unwrap();
    assert_eq!(replan(&gce, &local), vec![]);
}

#[test]
fn shared_node_health_check_survives_while_another_lb_uses_it() {
    let s = Scenario::new();
    let other = Scenario::new().name("default", "other");
    let mut other = other;
    other.service.metadata.uid = Some("99999999-0000-0000-0000-000000000000".into());
    let mut gce = MiniGce::default();
    gce.converge(&s, 3).unwrap();
    gce.converge(&other, 3).unwrap();

    // The switch to Local tries to delete the shared check; GCE keeps it for the other pool.
    let local = s.clone().etp_local(30500);
    let applied = gce.converge(&local, 3).unwrap();
    assert!(applied.contains(&Action::DeleteHealthCheck {
        name: NODE_HC.into(),
        keep_if_in_use: true
    }));
    assert_eq!(
        gce.kept, 1,
        "the delete was refused as in use and counted as done"
    );
    assert!(
        gce.health_checks.contains_key(NODE_HC),
        "still used by the other pool"
    );
    assert!(
        gce.firewalls.contains_key(&format!("{NODE_HC}-http-hc")),
        "its firewall stays with it"
    );

    // The last user removes it.
    gce.delete_lb(&other.names(), 3).unwrap();
    assert!(!gce.health_checks.contains_key(NODE_HC));
    assert!(!gce.firewalls.contains_key(&format!("{NODE_HC}-http-hc")));
}

#[test]
fn affinity_change_recreates_pool_and_forwarding_rule_only() {
    let s = Scenario::new();
    let (mut gce, _) = built(&s);
    let sticky = s.affinity("ClientIP");
    let actions = replan(&gce, &sticky);
    assert_eq!(
        labels(&actions),
        [
            "create_address",
            "delete_forwarding_rule",
            "delete_target_pool",
            "create_target_pool",
            "create_forwarding_rule",
            "delete_address"
        ]
    );
    let ip = gce.forwarding_rules[LB].ip_address.clone();
    gce.apply_all(&actions).unwrap();
    assert_eq!(gce.pools[LB].session_affinity, AFFINITY_CLIENT_IP);
    assert_eq!(gce.forwarding_rules[LB].ip_address, ip);
    assert_eq!(replan(&gce, &sticky), vec![]);
}

#[test]
fn empty_affinity_reported_by_gce_does_not_recreate() {
    let s = Scenario::new();
    let (mut gce, _) = built(&s);
    gce.pools.get_mut(LB).unwrap().session_affinity.clear();
    assert_eq!(replan(&gce, &s), vec![]);
}

#[test]
fn forwarding_rule_pointing_elsewhere_gets_set_target() {
    let s = Scenario::new();
    let (mut gce, _) = built(&s);
    gce.forwarding_rules.get_mut(LB).unwrap().target =
        "projects/proj/regions/us-central1/targetPools/x".into();
    let actions = replan(&gce, &s);
    assert_eq!(labels(&actions), ["set_target"]);
}

#[test]
fn delete_plan_order_and_idempotence() {
    let s = Scenario::new();
    let (mut gce, _) = built(&s);
    let names = s.names();
    let actions = plan_delete(&names, &gce.observed(&names, None));
    assert_eq!(
        actions,
        [
            Action::DeleteForwardingRule { name: LB.into() },
            Action::DeleteTargetPool { name: LB.into() },
            Action::DeleteFirewall {
                name: format!("k8s-fw-{LB}")
            },
            // No address: released when the forwarding rule took the IP.
            // The shared check last (GCE may keep it), then its firewall.
            Action::DeleteHealthCheck {
                name: NODE_HC.into(),
                keep_if_in_use: true
            },
            Action::DeleteFirewall {
                name: format!("{NODE_HC}-http-hc")
            },
        ]
    );
    gce.apply_all(&actions).unwrap();
    assert_eq!(
        gce,
        MiniGce {
            next_ip: gce.next_ip,
            calls: gce.calls,
            ..Default::default()
        }
    );
    assert_eq!(plan_delete(&names, &gce.observed(&names, None)), vec![]);
}

#[test]
fn user_owned_ip_is_used_and_never_released() {
    let s = Scenario::new().load_balancer_ip("198.51.100.7");
    let mut gce = MiniGce::default();
    gce.reserve_user_address("my-ip", "198.51.100.7", TIER_PREMIUM);
    let applied = gce.converge(&s, 3).unwrap();
    assert!(!labels(&applied).contains(&"create_address"));
    assert_eq!(gce.forwarding_rules[LB].ip_address, "198.51.100.7");

    let names = s.names();
    let delete = plan_delete(&names, &gce.observed(&names, s.requested_ip().as_deref()));
    assert!(!labels(&delete).contains(&"delete_address"));
    gce.apply_all(&delete).unwrap();
    assert!(gce.addresses.contains_key("my-ip"));
}

#[test]
fn switching_to_user_ip_releases_our_address_after_moving() {
    let s = Scenario::new();
    let (mut gce, _) = built(&s);
    gce.reserve_user_address("my-ip", "198.51.100.7", TIER_PREMIUM);
    let moved = s.load_balancer_ip("198.51.100.7");
    let actions = replan(&gce, &moved);
    // Our reservation was released when the LB was built: nothing of ours to release now.
    assert!(!labels(&actions).contains(&"delete_address"), "{actions:?}");
    assert_eq!(labels(&actions).last(), Some(&"create_forwarding_rule"));
    gce.apply_all(&actions).unwrap();
    assert!(gce.addresses.contains_key("my-ip"));
    assert_eq!(gce.forwarding_rules[LB].ip_address, "198.51.100.7");
    assert!(!gce.addresses.contains_key(LB));
    assert_eq!(replan(&gce, &moved), vec![]);
}

#[test]
fn requested_ip_must_be_reserved_or_current_and_in_the_right_tier() {
    let s = Scenario::new().load_balancer_ip("198.51.100.8");
    let e = s.ensure(&Observed::default()).unwrap_err();
    assert_eq!(e.field(), "spec.loadBalancerIP");

    let mut gce = MiniGce::default();
    gce.reserve_user_address("std-ip", "198.51.100.8", TIER_STANDARD);
    let e = s
        .ensure(&gce.observed(&s.names(), Some("198.51.100.8")))
        .unwrap_err();
    assert!(e.to_string().contains("STANDARD"), "{e}");
}

#[test]
fn tier_annotation_change_replaces_forwarding_rule_and_address() {
    let s = Scenario::new().annotation(NETWORK_TIER_ANNOTATION, "Premium");
    let (mut gce, _) = built(&s);
    let standard = s.annotation(NETWORK_TIER_ANNOTATION, "Standard");
    let applied = gce.converge(&standard, 3).unwrap();
    // The wrong-tier forwarding rule goes (upstream deleteWrongNetworkTieredResources); the IP of
    // the other tier cannot move, so a new one is reserved in the right tier, and released again.
    assert_eq!(
        labels(&applied)[..2],
        ["delete_forwarding_rule", "create_address"]
    );
    assert_eq!(labels(&applied).last(), Some(&"delete_address"));
    let reserved = applied.iter().find_map(|a| match a {
        Action::CreateAddress(a) => Some(a.network_tier.clone()),
        _ => None,
    });
    assert_eq!(reserved.as_deref(), Some(TIER_STANDARD));
    assert_eq!(gce.forwarding_rules[LB].network_tier, TIER_STANDARD);
    assert!(gce.addresses.is_empty());
}

#[test]
fn hostile_service_names_yield_valid_json_descriptions() {
    let hostile = "we\"b\n},{\"x\":\"\\";
    let s = Scenario::new().name("ns\"\u{7}", hostile);
    let (gce, applied) = built(&s);
    let want = format!("ns\"\u{7}/{hostile}");
    let address_description = applied
        .iter()
        .find_map(|a| match a {
            Action::CreateAddress(a) => Some(a.description.clone()),
            _ => None,
        })
        .expect("an address was reserved");
    for desc in [
        &gce.forwarding_rules[LB].description,
        &gce.pools[LB].description,
        &address_description,
        &gce.firewalls[&format!("k8s-fw-{LB}")].description,
    ] {
        let v: serde_json::Value = serde_json::from_str(desc).unwrap_or_else(|e| panic!("{desc}: {e}"));
        assert_eq!(v["kubernetes.io/service-name"], want.as_str(), "{desc}");
        assert_eq!(
            v.as_object().unwrap().len(),
            if desc.contains("service-ip") { 2 } else { 1 }
        );
    }
}

#[test]
fn firewall_drift_rules() {
    let s = Scenario::new()
        .ports("TCP", &[80, 81])
        .source_ranges(&["10.0.0.1/24"]);
    let (mut gce, _) = built(&s);
    let fw = format!("k8s-fw-{LB}");
    assert_eq!(
        gce.firewalls[&fw].source_ranges,
        ["10.0.0.0/24"],
        "host bits cleared"
    );
    assert_eq!(gce.firewalls[&fw].allowed[0].ports, ["80-81"]);
    // Older upstream wrote one entry per port: accepted, no patch.
    gce.firewalls.get_mut(&fw).unwrap().allowed[0].ports = vec!["81".into(), "80".into()];
    assert_eq!(replan(&gce, &s), vec![]);
    // Someone opened it to the world: patched back.
    gce.firewalls.get_mut(&fw).unwrap().source_ranges = vec!["0.0.0.0/0".into()];
    assert_eq!(labels(&replan(&gce, &s)), ["patch_firewall"]);
}

#[test]
fn health_check_drift_keeps_larger_timings() {
    let s = Scenario::new();
    let (mut gce, _) = built(&s);
    gce.health_checks.get_mut(NODE_HC).unwrap().check_interval_sec = 30;
    assert_eq!(replan(&gce, &s), vec![], "slower than ours is fine");
    let hc = gce.health_checks.get_mut(NODE_HC).unwrap();
    hc.unhealthy_threshold = 1;
    let actions = replan(&gce, &s);
    let [Action::UpdateHealthCheck(updated)] = actions.as_slice() else {
        panic!("{actions:?}")
    };
    assert_eq!((updated.check_interval_sec, updated.unhealthy_threshold), (30, 3));
}
