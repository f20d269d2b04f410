use std::collections::BTreeMap;

use super::*;
use crate::lb::internal::delete::*;
use crate::lb::internal::plan::*;
use crate::objects::Address;
use crate::objects::action::Action;
use crate::objects::observed::IlbObserved;
use crate::testutil::{Scenario, config};

pub(super) fn ilb(s: Scenario) -> Scenario {
    s.annotation("networking.gke.io/load-balancer-type", "Internal")
}

pub(super) fn setup(s: &Scenario) -> (IlbSpec, IlbNames, DesiredIlb, Config) {
    let cfg = config();
    let spec = IlbSpec::from_service(&s.service).unwrap();
    let names = IlbNames::new(&spec.base.uid, &cfg.cluster_id, &spec.base.object).unwrap();
    let (hosts, _) = crate::lb::hosts::lb_hosts(&s.nodes);
    let d = desired(&spec, &names, &hosts, &cfg);
    (spec, names, d, cfg)
}

/// Applies a plan to an observation the way GCE would (IPs: `ip` for a reservation without one).
fn apply(o: &mut IlbObserved, actions: &[Action], ip: &str) {
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
            Action::CreateHealthCheckV1(h) | Action::UpdateHealthCheckV1(h) => {
                if h.name.starts_with("k8s-") {
                    o.nodes_health_check = Some(h.clone());
                } else {
                    o.local_health_check = Some(h.clone());
                }
            }
            Action::DeleteHealthCheckV1 { name, .. } => {
                if name.starts_with("k8s-") {
                    o.nodes_health_check = None;
                } else {
                    o.local_health_check = None;
                }
            }
            Action::CreateAddress(a) => {
                let mut a = a.clone();
                a.address.get_or_insert_with(|| ip.to_owned());
                o.address = Some(a);
            }
            Action::DeleteAddress { .. } => o.address = None,
            Action::CreateBackendService(b) | Action::UpdateBackendService(b) => {
                o.backend_service = Some(b.clone())
            }
            Action::DeleteBackendService { .. } => o.backend_service = None,
            Action::CreateForwardingRule(f) => o.forwarding_rule = Some(f.clone()),
            Action::DeleteForwardingRule { .. } => o.forwarding_rule = None,
            Action::CreateFirewall(f) | Action::PatchFirewall(f) => {
                let slot = if f.name.starts_with("k8s-fw-") {
                    &mut o.firewall
                } else if f.name.starts_with("k8s-") {
                    &mut o.nodes_health_check_firewall
                } else {
                    &mut o.local_health_check_firewall
                };
                *slot = Some(f.clone());
            }
            Action::DeleteFirewall { name } => {
                for slot in [
                    &mut o.firewall,
                    &mut o.legacy_firewall,
                    &mut o.nodes_health_check_firewall,
                    &mut o.local_health_check_firewall,
                ] {
                    if slot.as_ref().is_some_and(|f| &f.name == name) {
                        *slot = None;
                    }
                }
            }
            Action::DeleteInstanceGroup { zone, .. } => {
                o.instance_groups.remove(zone);
            }
            other => panic!("not an internal LB call: {other:?}"),
        }
    }
}

pub(super) fn converge(s: &Scenario, o: &mut IlbObserved) -> Vec<Vec<Action>> {
    let (_, _, d, cfg) = setup(s);
    let mut rounds = Vec::new();
    for _ in 0..4 {
        let plan = plan_ensure(&d, o, &cfg);
        if plan.actions.is_empty() && !plan.replan {
            return rounds;
        }
        apply(o, &plan.actions, "10.128.0.7");
        rounds.push(plan.actions);
    }
    panic!("no convergence: {rounds:?}");
}

#[test]
fn recognises_both_annotations_and_values() {
    let s = Scenario::new();
    assert!(!is_internal(&s.service));
    assert!(is_internal(&ilb(Scenario::new()).service));
    let legacy = Scenario::new().annotation("cloud.google.com/load-balancer-type", "internal");
    assert!(is_internal(&legacy.service));
    let other = Scenario::new().annotation("networking.gke.io/load-balancer-type", "External");
    assert!(!is_internal(&other.service));
}

#[test]
fn desired_objects_follow_upstream() {
    let s = ilb(Scenario::new().ports("TCP", &[8080, 80]));
    let (spec, names, d, cfg) = setup(&s);
    assert_eq!(names.instance_group, "k8s-ig--0123456789abcdef");
    assert_eq!(names.nodes_health_check, "k8s-0123456789abcdef-node");
    assert_eq!(names.nodes_health_check_firewall, "k8s-0123456789abcdef-node-hc");
    assert_eq!(names.local_health_check_firewall, format!("{}-hc", names.lb));
    assert_eq!(d.health_check.description, "");
    assert_eq!(d.health_check.type_, "HTTP");
    assert_eq!(
        (
            d.health_check.http_health_check.port,
            d.health_check.http_health_check.request_path.as_str()
        ),
        (10256, "/healthz")
    );
    assert_eq!(d.backend_service.load_balancing_scheme, "INTERNAL");
    assert_eq!(
        d.backend_service.health_checks,
        [cfg.health_check_url(&names.nodes_health_check)]
    );
    assert_eq!(d.forwarding_rule.ports, ["8080", "80"], "service order");
    assert!(!d.forwarding_rule.all_ports);
    assert_eq!(d.forwarding_rule.subnetwork, cfg.subnetwork_url("default"));
    assert!(d.forwarding_rule.port_range.is_empty() && d.forwarding_rule.target.is_empty());
    assert_eq!(spec.base.protocol, "TCP");
}

#[test]
fn more_than_five_ports_use_all_ports_and_annotations_apply() {
    let s = ilb(Scenario::new().ports("UDP", &[1, 2, 3, 4, 5, 6]))
        .annotation(SUBNET_ANNOTATION, "ilb-subnet")
        .annotation(GLOBAL_ACCESS_ANNOTATION, "true");
    let (_, _, d, cfg) = setup(&s);
    assert!(d.forwarding_rule.all_ports);
    assert!(d.forwarding_rule.ports.is_empty());
    assert!(d.forwarding_rule.allow_global_access);
    assert_eq!(d.forwarding_rule.subnetwork, cfg.subnetwork_url("ilb-subnet"));
    assert_eq!(d.backend_service.protocol, "UDP");
    let bad = ilb(Scenario::new()).annotation(SUBNET_ANNOTATION, "Not_A_Name");
    assert!(IlbSpec::from_service(&bad.service).is_err());
}

#[test]
fn missing_subnet_hint_names_the_annotation_or_the_cluster_setting() {
    let s = ilb(Scenario::new()).annotation(SUBNET_ANNOTATION, "ilb-subnet");
    let (spec, _, _, cfg) = setup(&s);
    let hint = spec.missing_subnet_hint(&cfg);
    assert!(hint.starts_with(&format!("{}: ", spec.base.object)), "{hint}");
    assert!(
        hint.contains(&format!("metadata.annotations[{SUBNET_ANNOTATION}]: subnetwork \"ilb-subnet\" does not exist in region {}", cfg.region)),
        "{hint}"
    );
    let (plain, _, _, cfg) = setup(&ilb(Scenario::new()));
    let hint = plain.missing_subnet_hint(&cfg);
    assert!(
        hint.contains(&format!("the cluster's subnetwork {:?}", cfg.subnetwork))
            && !hint.contains("annotations"),
        "{hint}"
    );
    let gce = "Invalid value for field 'resource.subnetwork': 'projects/p/regions/r/subnetworks/x'. The referenced subnetwork resource cannot be found.";
    assert!(is_missing_subnet(Some(400), gce));
    assert!(
        !is_missing_subnet(Some(404), gce),
        "other statuses are other errors"
    );
    assert!(!is_missing_subnet(
        Some(400),
        "Invalid value for field 'resource.ports'"
    ));
}

#[test]
fn new_ilb_reserves_then_builds_in_upstream_order_and_resync_is_empty() {
    let s = ilb(Scenario::new());
    let mut o = IlbObserved::default();
    let rounds = converge(&s, &mut o);
    let labels: Vec<Vec<&str>> = rounds
        .iter()
        .map(|r| r.iter().map(Action::label).collect())
        .collect();
    let zones = setup(&s).2.instance_groups.len();
    assert!(zones >= 1);
    let mut first = Vec::new();
    for _ in 0..zones {
        first.extend(["create_instance_group", "add_group_instances"]);
    }
    first.extend(["create_hc", "create_address"]);
    assert_eq!(labels[0], first);
    assert_eq!(
        labels[1],
        [
            "create_backend_service",
            "create_forwarding_rule",
            "create_firewall",
            "create_firewall",
            "delete_address"
        ]
    );
    assert_eq!(labels.len(), 2);
    assert_eq!(o.forwarding_rule.as_ref().unwrap().ip_address, "10.128.0.7");
    let fw = o.firewall.as_ref().unwrap();
    assert_eq!(fw.destination_ranges, ["10.128.0.7"]);
    assert!(o.address.is_none());
}

#[test]
fn node_changes_touch_only_group_membership() {
    let s = ilb(Scenario::new());
    let mut o = IlbObserved::default();
    converge(&s, &mut o);
    let zone = o.instance_groups.keys().next().unwrap().clone();
    let s2 = s.clone().add_node("extra", &zone);
    let rounds = converge(&s2, &mut o);
    assert_eq!(rounds.len(), 1);
    assert!(
        matches!(rounds[0].as_slice(), [Action::AddGroupInstances { instances, .. }] if instances.len() == 1)
    );
    let rounds = converge(&s, &mut o);
    assert!(matches!(
        rounds[0].as_slice(),
        [Action::RemoveGroupInstances { .. }]
    ));
}

#[test]
fn port_change_recreates_rule_on_the_same_ip_behind_a_reservation() {
    let s = ilb(Scenario::new().ports("TCP", &[80]));
    let mut o = IlbObserved::default();
    converge(&s, &mut o);
    let s2 = ilb(Scenario::new().ports("TCP", &[80, 81]));
    let rounds = converge(&s2, &mut o);
    let labels: Vec<&str> = rounds[0].iter().map(Action::label).collect();
    assert_eq!(
        labels,
        [
            "create_address",
            "delete_forwarding_rule",
            "create_forwarding_rule",
            "patch_firewall",
            "delete_address"
        ]
    );
    assert!(matches!(&rounds[0][0], Action::CreateAddress(a) if a.address.as_deref() == Some("10.128.0.7")));
    assert_eq!(o.forwarding_rule.as_ref().unwrap().ip_address, "10.128.0.7");
}

#[test]
fn etp_local_swaps_health_checks_and_clears_the_old_one() {
    let s = ilb(Scenario::new());
    let mut o = IlbObserved::default();
    converge(&s, &mut o);
    let local = ilb(Scenario::new().etp_local(31000));
    let rounds = converge(&local, &mut o);
    let labels: Vec<&str> = rounds[0].iter().map(Action::label).collect();
    assert_eq!(
        labels,
        [
            "create_hc",
            "update_backend_service",
            "create_firewall",
            "delete_hc",
            "delete_firewall"
        ]
    );
    assert!(o.nodes_health_check.is_none() && o.nodes_health_check_firewall.is_none());
    assert_eq!(
        o.local_health_check.as_ref().unwrap().http_health_check.port,
        31000
    );
    // The shared check kept as in use by another LB: its firewall stays, no retry.
    let mut o2 = IlbObserved::default();
    converge(&s, &mut o2);
    o2.kept_in_use
        .insert(format!("healthChecks/{}", setup(&s).1.nodes_health_check));
    let (_, _, d, cfg) = setup(&local);
    let plan = plan_ensure(&d, &o2, &cfg);
    assert!(
        !plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::DeleteHealthCheckV1 { .. }))
    );
}

#[test]
fn delete_takes_everything_and_keeps_what_is_in_use() {
    let s = ilb(Scenario::new());
    let mut o = IlbObserved::default();
    converge(&s, &mut o);
    let names = setup(&s).1;
    let all = plan_delete(&names, &o, Teardown::All);
    let labels: Vec<&str> = all.iter().map(Action::label).collect();
    assert_eq!(
        labels[..3],
        [
            "delete_forwarding_rule",
            "delete_backend_service",
            "delete_firewall"
        ]
    );
    assert!(labels.ends_with(&["delete_hc", "delete_firewall", "delete_instance_group"]));
    let mut kept = o.clone();
    kept.kept_in_use
        .insert(format!("healthChecks/{}", names.nodes_health_check));
    for zone in o.instance_groups.keys() {
        kept.kept_in_use
            .insert(format!("instanceGroups/{zone}/{}", names.instance_group));
    }
    let rest = plan_delete(&names, &kept, Teardown::All);
    assert!(!rest.iter().any(|a| matches!(
        a,
        Action::DeleteHealthCheckV1 { .. } | Action::DeleteInstanceGroup { .. }
    )));
    assert!(
        !rest
            .iter()
            .any(|a| a.target_name() == names.nodes_health_check_firewall)
    );
    apply(&mut o, &all, "x");
    assert_eq!(plan_delete(&names, &o, Teardown::All), Vec::<Action>::new());
    assert_eq!(o.instance_groups, BTreeMap::new());
}

#[test]
fn switching_teardown_leaves_external_rule_and_address() {
    let names = IlbNames::new("uid-1", "cid", "Service default/x").unwrap();
    let o = IlbObserved {
        forwarding_rule: Some(ForwardingRule {
            name: names.lb.clone(),
            load_balancing_scheme: "EXTERNAL".into(),
            ..ForwardingRule::default()
        }),
        address: Some(Address {
            name: names.lb.clone(),
            address_type: "EXTERNAL".into(),
            ..Address::default()
        }),
        ..IlbObserved::default()
    };
    assert_eq!(
        plan_delete(&names, &o, Teardown::InternalOnly),
        Vec::<Action>::new()
    );
    assert_eq!(plan_delete(&names, &o, Teardown::All).len(), 2);
}

#[test]
fn rules_compare_as_upstream() {
    let a = ForwardingRule {
        ip_address: "10.0.0.1".into(),
        ports: vec!["80".into(), "81".into()],
        subnetwork: "https://x/compute/v1/projects/p/regions/r/subnetworks/s".into(),
        ..ForwardingRule::default()
    };
    let mut b = a.clone();
    b.ip_address = String::new();
    b.ports = vec!["81".into(), "80".into()];
    b.subnetwork = "projects/p/regions/r/subnetworks/s".into();
    assert!(rules_equal(&a, &b));
    b.allow_global_access = true;
    assert!(!rules_equal(&a, &b));
}
