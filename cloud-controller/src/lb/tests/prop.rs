//! Property: from any converged LB state A, planning for any Service B and applying the plan to
//! the in-memory GCE (which rejects ill-ordered calls) reaches exactly B's desired objects within
//! two rounds, after which the plan is empty.

use proptest::prelude::*;

use crate::config::EtpTransition;
use crate::lb::spec::{HealthCheckKind, NETWORK_TIER_ANNOTATION};
use crate::objects::{self, TIER_PREMIUM};
use crate::testutil::{MiniGce, Scenario, node};

const USER_IP: &str = "198.51.100.9";

#[derive(Debug, Clone)]
struct Shape {
    udp: bool,
    ports: Vec<i32>,
    client_ip: bool,
    local_port: Option<i32>,
    nodes: Vec<usize>,
    ranges: Vec<&'static str>,
    tier: Option<&'static str>,
    user_ip: bool,
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        any::<bool>(),
        proptest::sample::subsequence(vec![53, 80, 81, 443, 8080], 1..=4),
        any::<bool>(),
        proptest::option::of(30000..30010i32),
        proptest::sample::subsequence((0..6).collect::<Vec<usize>>(), 1..=6),
        proptest::sample::subsequence(vec!["10.0.0.0/8", "192.168.1.7/24", "0.0.0.0/0"], 0..=3),
        proptest::option::of(proptest::sample::select(vec!["Standard", "Premium"])),
        any::<bool>(),
    )
        .prop_map(
            |(udp, ports, client_ip, local_port, nodes, ranges, tier, user_ip)| {
                // A user address is PREMIUM here; asking for it with Standard is a (tested) error.
                let tier = if user_ip && tier == Some("Standard") {
                    None
                } else {
                    tier
                };
                Shape {
                    udp,
                    ports,
                    client_ip,
                    local_port,
                    nodes,
                    ranges,
                    tier,
                    user_ip,
                }
            },
        )
}

fn scenario(s: &Shape, mode: EtpTransition, batch: usize, create_max: usize) -> Scenario {
    let zones = ["us-central1-a", "us-central1-b"];
    let nodes = s
        .nodes
        .iter()
        .map(|i| node(&format!("node-{i}"), zones[i % 2]))
        .collect();
    let mut sc = Scenario::new()
        .ports(if s.udp { "UDP" } else { "TCP" }, &s.ports)
        .with_nodes(nodes);
    sc.cfg.etp_transition = mode;
    sc.cfg.instance_batch = batch;
    sc.cfg.create_instances_max = create_max;
    if s.client_ip {
        sc = sc.affinity("ClientIP");
    }
    if let Some(port) = s.local_port {
        sc = sc.etp_local(port);
    }
    if !s.ranges.is_empty() {
        sc = sc.source_ranges(&s.ranges);
    }
    if let Some(tier) = s.tier {
        sc = sc.annotation(NETWORK_TIER_ANNOTATION, tier);
    }
    if s.user_ip {
        sc = sc.load_balancer_ip(USER_IP);
    }
    sc
}

fn check_matches_desired(gce: &MiniGce, sc: &Scenario) -> Result<(), TestCaseError> {
    let names = sc.names();
    let plan = sc
        .ensure(&gce.observed(&names, sc.requested_ip().as_deref()))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(plan.actions.is_empty(), "not settled: {:?}", plan.actions);
    let want = plan
        .desired
        .ok_or_else(|| TestCaseError::fail("no desired state"))?;

    prop_assert_eq!(Some(&want.forwarding_rule), gce.forwarding_rules.get(&names.lb));
    prop_assert_eq!(Some(&want.firewall), gce.firewalls.get(&names.firewall));
    prop_assert_eq!(
        Some(&want.health_check),
        gce.health_checks.get(&want.health_check.name)
    );
    prop_assert_eq!(
        Some(&want.health_check_firewall),
        gce.firewalls.get(&want.health_check_firewall.name)
    );
    let pool = gce
        .pools
        .get(&names.lb)
        .ok_or_else(|| TestCaseError::fail("no pool"))?;
    let mut have_instances = pool.instances.clone();
    have_instances.sort();
    prop_assert_eq!(&have_instances, &want.target_pool.instances);
    prop_assert_eq!(&pool.session_affinity, &want.target_pool.session_affinity);
    prop_assert_eq!(&pool.health_checks, &want.target_pool.health_checks);
    // Our reservation exists only while the forwarding rule is built (upstream's release).
    prop_assert!(
        !gce.addresses.contains_key(&names.lb),
        "own address should be released once the forwarding rule holds the IP"
    );
    prop_assert_eq!(&want.forwarding_rule.ip_address, &want.ip);
    // Only the health check of the current kind remains.
    match want.spec.health_check {
        HealthCheckKind::Local { .. } => {
            prop_assert!(!gce.health_checks.contains_key(&names.nodes_health_check))
        }
        HealthCheckKind::Nodes => {
            prop_assert!(!gce.health_checks.contains_key(&names.local_health_check));
            prop_assert!(!gce.firewalls.contains_key(&names.local_health_check_firewall));
        }
    }
    // The user's address is never touched.
    prop_assert_eq!(
        gce.addresses.get("user-ip").and_then(|a| a.address.clone()),
        Some(USER_IP.to_string())
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn plans_converge_and_then_stay_quiet(
        a in shape(),
        b in shape(),
        swap in any::<bool>(),
        batch in 1usize..4,
        create_max in 1usize..5,
    ) {
        let mode = if swap { EtpTransition::SwapInPlace } else { EtpTransition::Recreate };
        let mut gce = MiniGce::default();
        gce.reserve_user_address("user-ip", USER_IP, TIER_PREMIUM);

        let sa = scenario(&a, mode, batch, create_max);
        gce.converge(&sa, 3).map_err(TestCaseError::fail)?;
        check_matches_desired(&gce, &sa)?;

        let sb = scenario(&b, mode, batch, create_max);
        gce.converge(&sb, 3).map_err(TestCaseError::fail)?;
        check_matches_desired(&gce, &sb)?;

        // GCE allows one health check per pool; MiniGce enforces it on every call too.
        let pool_links: Vec<&str> = gce.pools.values().flat_map(|p| p.health_checks.iter().map(|l| objects::link_key(l))).collect();
        prop_assert!(pool_links.len() <= 1);
    }

    #[test]
    fn node_only_changes_plan_only_instance_batches(a in shape(), nodes in proptest::sample::subsequence((0..6).collect::<Vec<usize>>(), 1..=6)) {
        let mut gce = MiniGce::default();
        gce.reserve_user_address("user-ip", USER_IP, TIER_PREMIUM);
        let sa = scenario(&a, EtpTransition::Recreate, 2, 200);
        gce.converge(&sa, 3).map_err(TestCaseError::fail)?;
        let sb = scenario(&Shape { nodes, ..a }, EtpTransition::Recreate, 2, 200);
        let plan = sb.ensure(&gce.observed(&sb.names(), sb.requested_ip().as_deref())).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for action in &plan.actions {
            prop_assert!(matches!(action.label(), "add_instances" | "remove_instances"), "{:?}", action);
        }
        gce.apply_all(&plan.actions).map_err(TestCaseError::fail)?;
        check_matches_desired(&gce, &sb)?;
    }
}
