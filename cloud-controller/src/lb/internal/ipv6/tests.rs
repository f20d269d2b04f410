//! Internal IPv6 plan decisions against an observation that applies the plans as GCE would
//! (an IPv6 reservation gets the subnetwork's next /96, a rule keeps GCE's `ADDR/96` form):
//! dual stack, IPv6-only, back to IPv4-only, a protocol change, teardown leaving nothing.

use crate::lb::internal::delete::{Teardown, plan_delete};
use crate::lb::internal::ipv6;
use crate::lb::internal::plan::plan_ensure;
use crate::lb::internal::tests::{ilb, setup};
use crate::lb::internal::{DesiredIlb, IlbNames};
use crate::objects::action::Action;
use crate::objects::observed::IlbObserved;
use crate::objects::{self, Address};
use crate::testutil::Scenario;

const IP4: &str = "10.128.0.9";
const IP6: &str = "fd20:1:2:3::";

/// What GCE does with each call, by the object's name.
fn apply(o: &mut IlbObserved, names: &IlbNames, actions: &[Action]) {
    for a in actions {
        match a {
            Action::CreateInstanceGroup { zone, .. } => {
                o.instance_groups.insert(zone.clone(), Vec::new());
            }
            Action::AddGroupInstances { zone, instances, .. } => {
                o.instance_groups
                    .entry(zone.clone())
                    .or_default()
                    .extend(instances.iter().cloned());
            }
            Action::DeleteInstanceGroup { zone, .. } => {
                o.instance_groups.remove(zone);
            }
            Action::CreateHealthCheckV1(h) | Action::UpdateHealthCheckV1(h) => {
                *check(o, names, &h.name) = Some(h.clone());
            }
            Action::DeleteHealthCheckV1 { name, .. } => *check(o, names, name) = None,
            Action::CreateAddress(a) => {
                let mut a = a.clone();
                let v6 = a.ip_version == "IPV6";
                a.address
                    .get_or_insert_with(|| (if v6 { IP6 } else { IP4 }).to_owned());
                let name = a.name.clone();
                *address(o, names, &name) = Some(a);
            }
            Action::DeleteAddress { name } => *address(o, names, name) = None,
            Action::CreateBackendService(b) | Action::UpdateBackendService(b) => {
                o.backend_service = Some(b.clone());
            }
            Action::DeleteBackendService { .. } => o.backend_service = None,
            Action::CreateForwardingRule(f) => {
                let mut f = f.clone();
                if f.ip_version == "IPV6" {
                    // GCE keeps an IPv6 rule's address as a /96.
                    f.ip_address = format!("{}/96", f.ip_address);
                    o.ipv6_forwarding_rule = Some(f);
                } else {
                    o.forwarding_rule = Some(f);
                }
            }
            Action::DeleteForwardingRule { name } if *name == names.ipv6.rule => {
                o.ipv6_forwarding_rule = None
            }
            Action::DeleteForwardingRule { .. } => o.forwarding_rule = None,
            Action::CreateFirewall(f) | Action::PatchFirewall(f) => {
                *firewall(o, names, &f.name) = Some(f.clone())
            }
            Action::DeleteFirewall { name } => *firewall(o, names, name) = None,
            other => panic!("unexpected call {other:?}"),
        }
    }
}

fn check<'a>(
    o: &'a mut IlbObserved,
    names: &IlbNames,
    name: &str,
) -> &'a mut Option<crate::objects::HealthCheck> {
    if name == names.nodes_health_check {
        &mut o.nodes_health_check
    } else {
        &mut o.local_health_check
    }
}

fn address<'a>(o: &'a mut IlbObserved, names: &IlbNames, name: &str) -> &'a mut Option<Address> {
    if name == names.ipv6.rule {
        &mut o.ipv6_address
    } else {
        &mut o.address
    }
}

fn firewall<'a>(
    o: &'a mut IlbObserved,
    names: &IlbNames,
    name: &str,
) -> &'a mut Option<crate::objects::Firewall> {
    let v6 = &names.ipv6;
    match name {
        n if n == names.firewall => &mut o.firewall,
        n if n == names.legacy_firewall => &mut o.legacy_firewall,
        n if n == names.nodes_health_check_firewall => &mut o.nodes_health_check_firewall,
        n if n == names.local_health_check_firewall => &mut o.local_health_check_firewall,
        n if n == v6.firewall => &mut o.ipv6_firewall,
        n if n == v6.shared_health_check_firewall => &mut o.ipv6_nodes_health_check_firewall,
        n if n == v6.local_health_check_firewall => &mut o.ipv6_local_health_check_firewall,
        other => panic!("unknown firewall {other}"),
    }
}

/// Plans and applies until a plan is empty; the ingress IPs of the converged plan.
fn converge(d: &DesiredIlb, o: &mut IlbObserved) -> (Option<String>, Option<String>) {
    let cfg = crate::testutil::config();
    for _ in 0..6 {
        let plan = plan_ensure(d, o, &cfg);
        if plan.actions.is_empty() {
            return (plan.ingress_ip, plan.ingress_ipv6);
        }
        apply(o, &d.names, &plan.actions);
    }
    panic!("no convergence");
}

fn scenario(families: &[&str]) -> Scenario {
    ilb(Scenario::new().name("namespace", "name")).ip_families(families)
}

#[test]
fn dual_stack_builds_ingress_gces_internal_ipv6_half_and_ipv4_only_removes_it() {
    let (_, names, d, cfg) = setup(&scenario(&["IPv4", "IPv6"]).source_ranges(&["10.0.0.0/8", "fd00::/8"]));
    let mut o = IlbObserved::default();
    // The IPv6 reservation GCE picks the IP of: INTERNAL, IPV6, in the rule's subnetwork.
    let mut v6_reservation = None;
    for _ in 0..3 {
        let plan = plan_ensure(&d, &o, &cfg);
        v6_reservation = v6_reservation.or(plan.actions.iter().find_map(|a| match a {
            Action::CreateAddress(a) if a.name == names.ipv6.rule => Some(a.clone()),
            _ => None,
        }));
        apply(&mut o, &names, &plan.actions);
    }
    let r = v6_reservation.expect("an IPv6 reservation");
    assert_eq!(
        (
            r.ip_version.as_str(),
            r.address_type.as_str(),
            r.address.as_deref()
        ),
        ("IPV6", "INTERNAL", None)
    );
    assert!(objects::same_link(&r.subnetwork, &d.forwarding_rule.subnetwork));

    assert_eq!(converge(&d, &mut o), (Some(IP4.into()), Some(IP6.into())));
    let rule = o.ipv6_forwarding_rule.clone().expect("IPv6 rule");
    assert_eq!(rule.name, format!("{}-ipv6", names.lb));
    assert_eq!(rule.ip_version, "IPV6");
    assert_eq!(rule.load_balancing_scheme, "INTERNAL");
    assert_eq!(rule.network_tier, "PREMIUM");
    let v4 = o.forwarding_rule.clone().expect("IPv4 rule");
    assert_eq!(
        (&rule.ports, rule.all_ports, &rule.ip_protocol),
        (&v4.ports, v4.all_ports, &v4.ip_protocol)
    );
    assert!(objects::same_link(&rule.backend_service, &v4.backend_service));
    assert!(objects::same_link(&rule.subnetwork, &v4.subnetwork));
    assert_eq!(
        rule.description,
        "{\"networking.gke.io/service-name\":\"namespace/name\"}"
    );
    let fw = o.ipv6_firewall.clone().expect("IPv6 nodes firewall");
    assert_eq!(fw.name, format!("k8s-fw-{}-ipv6", names.lb));
    assert_eq!(
        (fw.destination_ranges.as_slice(), fw.source_ranges.as_slice()),
        (&[IP6.to_owned()][..], &["fd00::/8".to_owned()][..])
    );
    let fw4 = o.firewall.clone().expect("IPv4 traffic firewall");
    assert_eq!(fw4.source_ranges, ["10.0.0.0/8"]);
    let hc = o
        .ipv6_nodes_health_check_firewall
        .clone()
        .expect("IPv6 health-check firewall");
    assert_eq!(hc.name, format!("{}-ipv6", names.nodes_health_check_firewall));
    assert_eq!(hc.source_ranges, ["2600:2d00:1:b029::/64"]);
    assert_eq!(
        (o.ipv6_address.clone(), o.address.clone()),
        (None, None),
        "reservations released"
    );

    let ann = ipv6::ipv6_status_annotations(&names, &d.spec);
    assert_eq!(
        ann["service.kubernetes.io/tcp-forwarding-rule-ipv6"],
        names.ipv6.rule
    );
    assert_eq!(
        ann["service.kubernetes.io/firewall-rule-ipv6"],
        names.ipv6.firewall
    );
    assert_eq!(ann["service.kubernetes.io/firewall-rule-for-hc-ipv6"], hc.name);

    // IPv4 only: the IPv6 rule and nodes firewall go first; the shared check's IPv6 firewall stays.
    let (_, _, d4, _) = setup(&scenario(&["IPv4"]).source_ranges(&["10.0.0.0/8"]));
    assert_eq!(
        plan_ensure(&d4, &o, &cfg).actions,
        [
            Action::DeleteForwardingRule {
                name: names.ipv6.rule.clone()
            },
            Action::DeleteFirewall {
                name: names.ipv6.firewall.clone()
            },
        ]
    );
    assert_eq!(converge(&d4, &mut o), (Some(IP4.into()), None));
    assert_eq!(
        (o.ipv6_forwarding_rule.clone(), o.ipv6_firewall.clone()),
        (None, None)
    );
}

#[test]
fn ipv6_only_has_no_ipv4_rule_address_or_traffic_firewall_and_teardown_leaves_nothing() {
    let (_, names, d, cfg) = setup(&scenario(&["IPv6"]).etp_local(31000));
    let mut o = IlbObserved::default();
    assert_eq!(converge(&d, &mut o), (None, Some(IP6.into())));
    assert_eq!(o.forwarding_rule, None);
    assert_eq!(o.address, None);
    assert_eq!(o.firewall, None);
    assert_eq!(
        o.local_health_check_firewall, None,
        "no IPv4 probers for an IPv6-only LB"
    );
    let hc = o
        .ipv6_local_health_check_firewall
        .clone()
        .expect("own check's IPv6 firewall");
    assert_eq!(hc.source_ranges, ["2600:2d00:1:b029::/64"]);
    assert_eq!(
        o.ipv6_firewall.clone().map(|f| f.source_ranges),
        Some(vec!["0::0/0".to_owned()])
    );

    // Dual stack from IPv6-only: the IPv6 half stays as it is.
    let (_, _, dual, _) = setup(&scenario(&["IPv6", "IPv4"]).etp_local(31000));
    let before = o.ipv6_forwarding_rule.clone();
    assert_eq!(converge(&dual, &mut o), (Some(IP4.into()), Some(IP6.into())));
    assert_eq!(o.ipv6_forwarding_rule, before);

    // Back to IPv6-only: the IPv4 rule and firewall go.
    let plan = plan_ensure(&d, &o, &cfg);
    assert!(plan.actions.contains(&Action::DeleteForwardingRule {
        name: names.lb.clone()
    }));
    assert!(plan.actions.contains(&Action::DeleteFirewall {
        name: names.firewall.clone()
    }));
    converge(&d, &mut o);

    let mut left = o.clone();
    for _ in 0..2 {
        let actions = plan_delete(&names, &left, Teardown::All);
        apply(&mut left, &names, &actions);
    }
    assert_eq!(left, IlbObserved::default(), "teardown leaves nothing");
}

#[test]
fn a_protocol_change_deletes_the_ipv6_rule_before_the_backend_service_and_keeps_its_ip() {
    let (_, names, d, cfg) = setup(&scenario(&["IPv4", "IPv6"]));
    let mut o = IlbObserved::default();
    converge(&d, &mut o);
    let (_, _, udp, _) = setup(&scenario(&["IPv4", "IPv6"]).ports("UDP", &[53]));
    let plan = plan_ensure(&udp, &o, &cfg);
    let pos = |want: &Action| plan.actions.iter().position(|a| a == want);
    let del6 = pos(&Action::DeleteForwardingRule {
        name: names.ipv6.rule.clone(),
    })
    .expect("IPv6 rule deleted");
    let bs = plan
        .actions
        .iter()
        .position(|a| matches!(a, Action::UpdateBackendService(_)))
        .expect("backend service updated");
    assert!(del6 < bs, "{:?}", plan.actions);
    assert_eq!(converge(&udp, &mut o).1, Some(IP6.into()));
    assert_eq!(o.ipv6_forwarding_rule.map(|r| r.ip_protocol), Some("UDP".into()));
}

#[test]
fn switching_to_external_keeps_an_external_ipv6_rule_of_the_same_name() {
    let names = IlbNames::new("uid-1", "cid", "Service default/x").unwrap();
    let o = IlbObserved {
        ipv6_forwarding_rule: Some(objects::ForwardingRule {
            name: names.ipv6.rule.clone(),
            load_balancing_scheme: "EXTERNAL".into(),
            ..Default::default()
        }),
        ..IlbObserved::default()
    };
    assert_eq!(
        plan_delete(&names, &o, Teardown::InternalOnly),
        Vec::<Action>::new()
    );
    assert_eq!(plan_delete(&names, &o, Teardown::All).len(), 1);
}
