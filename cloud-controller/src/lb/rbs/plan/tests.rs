//! RBS plan decisions, against an observation that applies the plans as GCE would: creation in
//! ingress-gce's order and convergence (a no-op resync plans nothing), node changes, ETP switches,
//! port changes on the same IP, and teardown leaving nothing (or what another LB keeps).

use super::*;
use crate::lb::hosts::lb_hosts;
use crate::lb::rbs::desired;
use crate::lb::spec::LbSpec;
use crate::naming::l4::L4Namer;
use crate::objects::{Address, Firewall, ForwardingRule};
use crate::testutil::{Scenario, config, labels, node};

const IP: &str = "203.0.113.7";
/// What GCE picks for an IPv6 reservation: the first /96 of the subnetwork's /64.
const IP6: &str = "2600:1900:4000:1::";

fn scenario() -> Scenario {
    Scenario::new()
        .name("namespace", "name")
        .with_nodes(vec![node("n1", "us-central1-a"), node("n2", "us-central1-b")])
}

fn desired_of(s: &Scenario) -> DesiredRbs {
    let cfg = config();
    let spec = LbSpec::from_service_mixed(&s.service).expect("valid service");
    let names = RbsNames::new(
        &L4Namer::new("kubesystem-uid1"),
        &cfg.cluster_id,
        ("namespace", "name", &spec.uid),
        &spec.object,
    )
    .expect("valid names");
    desired(&spec, &names, &lb_hosts(&s.nodes).0, &cfg)
}

fn set_fw(o: &mut RbsObserved, names: &RbsNames, fw: Option<Firewall>, name: &str) {
    if name == names.backend {
        o.nodes_firewall = fw;
    } else if name == names.ipv6.firewall {
        o.ipv6_nodes_firewall = fw;
    } else if name == names.shared_health_check_firewall {
        o.shared_health_check_firewall = fw;
    } else if name == names.ipv6.shared_health_check_firewall {
        o.ipv6_shared_health_check_firewall = fw;
    } else if name == names.ipv6.local_health_check_firewall {
        o.ipv6_local_health_check_firewall = fw;
    } else {
        o.local_health_check_firewall = fw;
    }
}

/// Applies a plan the way GCE would (a reservation without an IP gets [`IP`]).
fn apply(o: &mut RbsObserved, names: &RbsNames, actions: &[Action]) {
    for a in actions {
        match a {
            Action::CreateInstanceGroup { zone, .. } => {
                o.instance_groups.insert(zone.clone(), Vec::new());
            }
            Action::AddGroupInstances { zone, instances, .. } => {
                let m = o.instance_groups.entry(zone.clone()).or_default();
                m.extend(instances.iter().cloned());
                m.sort();
            }
            Action::RemoveGroupInstances { zone, instances, .. } => {
                let m = o.instance_groups.entry(zone.clone()).or_default();
                m.retain(|x| !instances.contains(x));
            }
            Action::DeleteInstanceGroup { zone, .. } => {
                o.instance_groups.remove(zone);
            }
            Action::CreateRegionHealthCheck(h) | Action::UpdateRegionHealthCheck(h) => {
                if h.name == names.shared_health_check {
                    o.shared_health_check = Some(h.clone());
                } else {
                    o.local_health_check = Some(h.clone());
                }
            }
            Action::DeleteRegionHealthCheck { name, .. } => {
                if *name == names.shared_health_check {
                    o.shared_health_check = None;
                } else {
                    o.local_health_check = None;
                }
            }
            Action::CreateAddress(a) if a.name == names.ipv6.rule => {
                let mut a = a.clone();
                a.address.get_or_insert_with(|| IP6.to_owned());
                o.ipv6_address = Some(a);
            }
            Action::CreateAddress(a) => {
                let mut a = a.clone();
                a.address.get_or_insert_with(|| IP.to_owned());
                o.address = Some(a);
            }
            Action::DeleteAddress { name } if *name == names.ipv6.rule => o.ipv6_address = None,
            Action::DeleteAddress { .. } => o.address = None,
            Action::CreateBackendService(b) | Action::UpdateBackendService(b) => {
                o.backend_service = Some(b.clone())
            }
            Action::DeleteBackendService { .. } => o.backend_service = None,
            Action::CreateForwardingRule(f) if f.name == names.ipv6.rule => {
                o.ipv6_forwarding_rule = Some(f.clone())
            }
            Action::CreateForwardingRule(f) => o.forwarding_rule = Some(f.clone()),
            Action::DeleteForwardingRule { name } if *name == names.ipv6.rule => {
                o.ipv6_forwarding_rule = None
            }
            Action::DeleteForwardingRule { .. } => o.forwarding_rule = None,
            Action::CreateFirewall(f) | Action::PatchFirewall(f) => {
                set_fw(o, names, Some(f.clone()), &f.name)
            }
            Action::DeleteFirewall { name } => set_fw(o, names, None, name),
            other => panic!("not an RBS call: {other:?}"),
        }
    }
}

/// Plans and applies until the plan is empty; returns every round's labels and the last IP.
fn converge(d: &DesiredRbs, o: &mut RbsObserved) -> (Vec<Vec<&'static str>>, Option<String>) {
    let mut rounds = Vec::new();
    for _ in 0..5 {
        let plan = plan_ensure(d, o, &config());
        if plan.actions.is_empty() {
            return (rounds, plan.ingress_ip);
        }
        rounds.push(labels(&plan.actions));
        apply(o, &d.names, &plan.actions);
    }
    panic!("no convergence: {rounds:?}");
}

#[test]
fn creation_follows_ingress_gce_and_a_resync_plans_nothing() {
    let d = desired_of(&scenario());
    let mut o = RbsObserved::default();
    let (rounds, ip) = converge(&d, &mut o);
    assert_eq!(
        rounds,
        [
            vec![
                "create_instance_group",
                "add_group_instances",
                "create_instance_group",
                "add_group_instances",
                "create_region_hc",
                "create_backend_service",
                "create_address",
            ],
            vec![
                "create_forwarding_rule",
                "create_firewall",
                "create_firewall",
                "delete_address",
            ],
        ]
    );
    assert_eq!(ip.as_deref(), Some(IP));
    let fr = o.forwarding_rule.as_ref().expect("rule");
    assert_eq!(fr.ip_address, IP);
    assert!(fr.description.contains(IP), "{}", fr.description);
    assert_eq!(
        o.nodes_firewall.as_ref().map(|f| f.destination_ranges.clone()),
        Some(vec![IP.to_owned()])
    );
    assert!(o.address.is_none(), "the temporary reservation is released");
}

#[test]
fn node_changes_touch_only_group_membership() {
    let s = scenario();
    let mut o = RbsObserved::default();
    converge(&desired_of(&s), &mut o);
    let d = desired_of(&s.remove_node("n2").add_node("n3", "us-central1-b"));
    let plan = plan_ensure(&d, &o, &config());
    assert_eq!(
        labels(&plan.actions),
        ["remove_group_instances", "add_group_instances"]
    );
}

#[test]
fn a_port_change_recreates_the_rule_on_the_same_ip_and_patches_the_firewall() {
    let s = scenario();
    let mut o = RbsObserved::default();
    converge(&desired_of(&s), &mut o);
    let d = desired_of(&s.ports("TCP", &[80, 443]));
    let plan = plan_ensure(&d, &o, &config());
    assert_eq!(
        labels(&plan.actions),
        [
            "create_address",
            "delete_forwarding_rule",
            "create_forwarding_rule",
            "patch_firewall",
            "delete_address",
        ]
    );
    let Action::CreateAddress(Address { address, .. }) = &plan.actions[0] else {
        panic!("{:?}", plan.actions[0]);
    };
    assert_eq!(
        address.as_deref(),
        Some(IP),
        "the rule's IP is reserved across the recreate"
    );
    apply(&mut o, &d.names, &plan.actions);
    assert_eq!(
        o.forwarding_rule.as_ref().map(|f| f.port_range.as_str()),
        Some("80-443")
    );
    assert!(plan_ensure(&d, &o, &config()).actions.is_empty());
}

#[test]
fn etp_switches_swap_the_checks_and_keep_a_shared_check_in_use() {
    let s = scenario();
    let mut o = RbsObserved::default();
    converge(&desired_of(&s), &mut o);
    let local = desired_of(&s.clone().etp_local(31000));
    let plan = plan_ensure(&local, &o, &config());
    assert_eq!(
        labels(&plan.actions),
        [
            "create_region_hc",
            "update_backend_service",
            "create_firewall",
            "delete_region_hc",
            "delete_firewall"
        ]
    );
    assert!(plan.actions.contains(&Action::DeleteRegionHealthCheck {
        name: "k8s2-7kpbhpki-l4-shared-hc".into(),
        keep_if_in_use: true,
    }));
    // Another LB uses the shared check: GCE kept it; the re-plan keeps it and its firewall.
    let mut kept = o.clone();
    apply(&mut kept, &local.names, &plan.actions[..3]);
    kept.kept_in_use
        .insert("regionHealthChecks/k8s2-7kpbhpki-l4-shared-hc".into());
    assert!(plan_ensure(&local, &kept, &config()).actions.is_empty());
    // Back to Cluster: the Service's own check and its firewall go.
    apply(&mut o, &local.names, &plan.actions);
    let back = plan_ensure(&desired_of(&s), &o, &config());
    assert_eq!(
        labels(&back.actions),
        [
            "create_region_hc",
            "update_backend_service",
            "create_firewall",
            "delete_region_hc",
            "delete_firewall"
        ]
    );
}

#[test]
fn teardown_leaves_nothing_and_never_a_target_pool_rule() {
    let d = desired_of(&scenario());
    let mut o = RbsObserved::default();
    converge(&d, &mut o);
    let actions = plan_delete(&d.names, &o);
    apply(&mut o, &d.names, &actions);
    assert_eq!(o, RbsObserved::default(), "every object is gone");
    assert!(
        plan_delete(&d.names, &o).is_empty(),
        "a repeated delete plans nothing"
    );

    // Another LB keeps the shared check and the groups: both stay, with the check's firewall.
    let mut o = RbsObserved::default();
    converge(&d, &mut o);
    o.kept_in_use
        .insert("regionHealthChecks/k8s2-7kpbhpki-l4-shared-hc".into());
    for zone in ["us-central1-a", "us-central1-b"] {
        o.kept_in_use
            .insert(format!("instanceGroups/{zone}/k8s-ig--0123456789abcdef"));
    }
    assert_eq!(
        labels(&plan_delete(&d.names, &o)),
        [
            "delete_forwarding_rule",
            "delete_firewall",
            "delete_backend_service"
        ]
    );

    // The target-pool LB's rule shares the name: an RBS teardown leaves it.
    let tp_rule = RbsObserved {
        forwarding_rule: Some(ForwardingRule {
            name: d.names.lb.clone(),
            target: "regions/us-central1/targetPools/a4f6".into(),
            ..ForwardingRule::default()
        }),
        ..RbsObserved::default()
    };
    assert!(plan_delete(&d.names, &tp_rule).is_empty());
}

#[test]
fn tcp_to_mixed_swaps_the_rule_for_an_l3_one_on_the_same_ip() {
    let s = scenario().ports("TCP", &[80]);
    let mut o = RbsObserved::default();
    converge(&desired_of(&s), &mut o);
    let port = |protocol: &str, port: i32| k8s_openapi::api::core::v1::ServicePort {
        port,
        protocol: Some(protocol.into()),
        ..Default::default()
    };
    let d = desired_of(&s.raw_ports(vec![port("TCP", 80), port("UDP", 53)]));
    let plan = plan_ensure(&d, &o, &config());
    assert_eq!(
        labels(&plan.actions),
        [
            "update_backend_service",
            "create_address",
            "delete_forwarding_rule",
            "create_forwarding_rule",
            "patch_firewall",
            "delete_address",
        ]
    );
    apply(&mut o, &d.names, &plan.actions);
    let fr = o.forwarding_rule.as_ref().expect("rule");
    assert_eq!(
        (fr.ip_protocol.as_str(), fr.all_ports, fr.ip_address.as_str()),
        ("L3_DEFAULT", true, IP)
    );
    assert_eq!(
        o.backend_service.as_ref().map(|b| b.protocol.as_str()),
        Some("UNSPECIFIED")
    );
    assert!(plan_ensure(&d, &o, &config()).actions.is_empty(), "converged");
}

#[test]
fn weighting_on_then_off_updates_the_policy_and_maglev_counts_as_unset() {
    let s = scenario().etp_local(31000);
    let mut o = RbsObserved::default();
    converge(&desired_of(&s), &mut o);
    let policy = |o: &RbsObserved| o.backend_service.as_ref().map(|b| b.locality_lb_policy.clone());
    assert_eq!(policy(&o).as_deref(), Some(""));
    let on = desired_of(&s.clone().annotation(
        crate::lb::spec::WEIGHTED_LB_ANNOTATION,
        crate::lb::spec::WEIGHTED_LB_PODS_PER_NODE,
    ));
    let plan = plan_ensure(&on, &o, &config());
    assert_eq!(labels(&plan.actions), ["update_backend_service"]);
    apply(&mut o, &on.names, &plan.actions);
    assert_eq!(policy(&o).as_deref(), Some("WEIGHTED_MAGLEV"));
    assert!(plan_ensure(&on, &o, &config()).actions.is_empty());
    // Off again: MAGLEV explicitly, which then matches the unset policy of the desired object.
    let off = desired_of(&s);
    let plan = plan_ensure(&off, &o, &config());
    assert_eq!(labels(&plan.actions), ["update_backend_service"]);
    apply(&mut o, &off.names, &plan.actions);
    assert_eq!(policy(&o).as_deref(), Some("MAGLEV"));
    assert!(plan_ensure(&off, &o, &config()).actions.is_empty());
}

#[test]
fn teardown_removes_the_ipv6_rule_and_firewall_before_the_backend_service() {
    let d = desired_of(&scenario());
    let mut o = RbsObserved::default();
    converge(&d, &mut o);
    // The IPv6 half as ingress-gce leaves it for a dual-stack Service.
    o.ipv6_forwarding_rule = Some(ForwardingRule {
        name: d.names.ipv6.rule.clone(),
        ip_version: "IPV6".into(),
        ..ForwardingRule::default()
    });
    o.ipv6_nodes_firewall = Some(Firewall {
        name: d.names.ipv6.firewall.clone(),
        ..Firewall::default()
    });
    let actions = plan_delete(&d.names, &o);
    let pos = |want: &Action| actions.iter().position(|a| a == want);
    let v6_rule = pos(&Action::DeleteForwardingRule {
        name: d.names.ipv6.rule.clone(),
    })
    .expect("IPv6 rule deleted");
    let v6_fw = pos(&Action::DeleteFirewall {
        name: d.names.ipv6.firewall.clone(),
    });
    assert!(v6_fw.is_some(), "IPv6 firewall deleted: {actions:?}");
    let backend = pos(&Action::DeleteBackendService {
        name: d.names.backend.clone(),
    })
    .expect("backend service deleted");
    assert!(v6_rule < backend, "{actions:?}");
    apply(&mut o, &d.names, &actions);
    assert_eq!(o, RbsObserved::default(), "both families gone");
    assert!(plan_delete(&d.names, &o).is_empty());
}

/// Plans and applies until the plan is empty; returns the last plan's IPv4 and IPv6 ingress IPs.
fn converge_both(d: &DesiredRbs, o: &mut RbsObserved) -> (Option<String>, Option<String>) {
    for _ in 0..6 {
        let plan = plan_ensure(d, o, &config());
        if plan.actions.is_empty() {
            return (plan.ingress_ip, plan.ingress_ipv6);
        }
        apply(o, &d.names, &plan.actions);
    }
    panic!("no convergence");
}

#[test]
fn dual_stack_builds_the_ipv6_half_as_ingress_gce_and_ipv4_only_removes_it() {
    let cfg = config();
    let d = desired_of(&scenario().ip_families(&["IPv4", "IPv6"]));
    let mut o = RbsObserved::default();
    // Round by round: the IPv6 reservation (GCE picks the IP), then rule, firewalls, release.
    let first = plan_ensure(&d, &o, &cfg);
    assert!(first.replan);
    apply(&mut o, &d.names, &first.actions);
    let second = plan_ensure(&d, &o, &cfg);
    let v6_addr = second.actions.iter().find_map(|a| match a {
        Action::CreateAddress(a) if a.name == d.names.ipv6.rule => Some(a.clone()),
        _ => None,
    });
    let v6_addr = v6_addr.expect("an IPv6 reservation");
    assert_eq!(v6_addr.ip_version, "IPV6");
    assert_eq!(v6_addr.address_type, "EXTERNAL");
    assert_eq!(v6_addr.address, None, "GCE picks the IP");
    assert!(
        v6_addr
            .subnetwork
            .ends_with("/regions/us-central1/subnetworks/default"),
        "{}",
        v6_addr.subnetwork
    );

    let (v4, v6) = converge_both(&d, &mut o);
    assert_eq!((v4.as_deref(), v6.as_deref()), (Some(IP), Some(IP6)));
    let rule = o.ipv6_forwarding_rule.clone().expect("IPv6 rule");
    assert_eq!(rule.ip_address, format!("{IP6}/96"));
    assert_eq!(rule.ip_version, "IPV6");
    assert!(objects::same_link(
        &rule.backend_service,
        &o.forwarding_rule.clone().unwrap().backend_service
    ));
    let fw = o.ipv6_nodes_firewall.clone().expect("IPv6 nodes firewall");
    assert_eq!(fw.destination_ranges, [IP6]);
    assert_eq!(fw.source_ranges, ["0::0/0"]);
    let hc_fw = o
        .ipv6_shared_health_check_firewall
        .clone()
        .expect("IPv6 health-check firewall");
    assert_eq!(hc_fw.source_ranges, ["2600:1901:8001::/48"]);
    assert_eq!(
        o.ipv6_address, None,
        "the reservation is released once the rule holds the IP"
    );
    assert_eq!(o.address, None);

    // IPv4 only again: the IPv6 rule and nodes firewall go; the shared check's IPv6 firewall stays
    // for the other Services on that check.
    let d4 = desired_of(&scenario().ip_families(&["IPv4"]));
    assert_eq!(
        plan_ensure(&d4, &o, &cfg).actions,
        [
            Action::DeleteForwardingRule {
                name: d.names.ipv6.rule.clone()
            },
            Action::DeleteFirewall {
                name: d.names.ipv6.firewall.clone()
            },
        ]
    );
    let (v4, v6) = converge_both(&d4, &mut o);
    assert_eq!((v4.as_deref(), v6), (Some(IP), None));
    assert_eq!(o.ipv6_forwarding_rule, None);
    assert_eq!(o.ipv6_nodes_firewall, None);
}

#[test]
fn ipv6_only_has_no_ipv4_rule_address_or_nodes_firewall() {
    let d = desired_of(&scenario().ip_families(&["IPv6"]));
    let mut o = RbsObserved::default();
    let (v4, v6) = converge_both(&d, &mut o);
    assert_eq!((v4, v6.as_deref()), (None, Some(IP6)));
    assert_eq!(o.forwarding_rule, None);
    assert_eq!(o.nodes_firewall, None);
    assert!(o.ipv6_forwarding_rule.is_some() && o.ipv6_nodes_firewall.is_some());
    // Both probers' firewalls: GCE probes the nodes over IPv4 as well.
    assert!(o.shared_health_check_firewall.is_some() && o.ipv6_shared_health_check_firewall.is_some());
    // Teardown leaves nothing.
    let teardown = plan_delete(&d.names, &o);
    apply(&mut o, &d.names, &teardown);
    assert_eq!(o, RbsObserved::default());
}

#[test]
fn source_ranges_split_by_family_with_the_missing_family_open_as_ingress_gce() {
    let s = scenario().ip_families(&["IPv4", "IPv6"]);
    let mut s = s;
    s.service.spec.as_mut().unwrap().load_balancer_source_ranges =
        Some(vec!["10.0.0.0/8".into(), "2001:db8::/32".into()]);
    let d = desired_of(&s);
    let mut o = RbsObserved::default();
    converge_both(&d, &mut o);
    assert_eq!(o.nodes_firewall.unwrap().source_ranges, ["10.0.0.0/8"]);
    assert_eq!(o.ipv6_nodes_firewall.unwrap().source_ranges, ["2001:db8::/32"]);

    // IPv6 ranges only: the IPv4 firewall is open to all (utils/sourceranges.go IPv4ServiceSourceRanges).
    s.service.spec.as_mut().unwrap().load_balancer_source_ranges = Some(vec!["2001:db8::/32".into()]);
    let d = desired_of(&s);
    let mut o = RbsObserved::default();
    converge_both(&d, &mut o);
    assert_eq!(o.nodes_firewall.unwrap().source_ranges, ["0.0.0.0/0"]);
    assert_eq!(o.ipv6_nodes_firewall.unwrap().source_ranges, ["2001:db8::/32"]);
}
