//! The shared IPv6 pieces: source ranges by family, and the rule planner's address handling.

use super::*;

#[test]
fn source_ranges_split_by_family_with_the_missing_family_open() {
    let both = ["10.0.0.0/8".to_owned(), "2001:db8::/32".to_owned()];
    assert_eq!(family_source_ranges(&both, false), ["10.0.0.0/8"]);
    assert_eq!(family_source_ranges(&both, true), ["2001:db8::/32"]);
    let v4 = ["10.0.0.0/8".to_owned()];
    assert_eq!(family_source_ranges(&v4, true), [ALLOW_ALL_IPV6]);
    assert_eq!(family_source_ranges(&[], false), [ALLOW_ALL_IPV4]);
}

fn rule(ip: &str) -> ForwardingRule {
    ForwardingRule {
        name: "r-ipv6".into(),
        ip_address: ip.to_owned(),
        ip_version: IP_VERSION_IPV6.into(),
        subnetwork: "projects/p/regions/r/subnetworks/s".into(),
        ..ForwardingRule::default()
    }
}

fn plan(
    have_rule: Option<&ForwardingRule>,
    have_address: Option<&Address>,
) -> (Option<(String, Option<Action>)>, Vec<Action>) {
    let p = RulePlan {
        name: "r-ipv6",
        subnetwork: "https://www.googleapis.com/compute/v1/projects/p/regions/r/subnetworks/s",
        address_type: "INTERNAL",
        network_tier: "",
        address_description: String::new(),
        build: rule,
        equal: |a: &ForwardingRule, b: &ForwardingRule| a.ip_address == b.ip_address,
        have_rule,
        have_address,
    };
    let mut actions = Vec::new();
    (plan_rule(&p, &mut actions), actions)
}

#[test]
fn a_rule_gce_holds_as_a_96_matches_its_bare_address_and_plans_nothing() {
    let have = rule("fd20::5/96");
    let (out, actions) = plan(Some(&have), None);
    assert_eq!(out, Some(("fd20::5".to_owned(), None)));
    assert_eq!(actions, []);
}

#[test]
fn no_rule_reserves_first_then_makes_the_rule_on_the_reserved_ip_and_releases() {
    let (out, actions) = plan(None, None);
    assert_eq!(out, None, "GCE picks the IP first");
    assert!(
        matches!(&actions[..], [Action::CreateAddress(a)] if a.ip_version == "IPV6" && a.address.is_none())
    );
    let reserved = Address {
        name: "r-ipv6".into(),
        address: Some("fd20::7".into()),
        ..Address::default()
    };
    let (out, actions) = plan(None, Some(&reserved));
    let release = Action::DeleteAddress {
        name: "r-ipv6".into(),
    };
    assert_eq!(out, Some(("fd20::7".to_owned(), Some(release))));
    assert_eq!(actions, [Action::CreateForwardingRule(rule("fd20::7"))]);
}
