//! The IPv6 half of a dual-stack or IPv6-only internal LB, as ingress-gce's L4 ILB builds it
//! (pkg/loadbalancers/l4.go, l4ipv6.go, forwarding_rules_ipv6.go, healthchecksl4): an INTERNAL
//! IPv6 address reserved in the rule's subnetwork while the `-ipv6` rule is made and released
//! after, the rule (`ipVersion: IPV6`, the bare address, ports or allPorts and global access as
//! the IPv4 rule) to the same backend service, the `-ipv6` nodes firewall and the health-check
//! firewall for GCE's ILB IPv6 probers; and their removal when the Service drops IPv6.

use std::collections::BTreeMap;

use crate::config::Config;
use crate::lb::internal::{DesiredIlb, IlbSpec, rules_equal, traffic_firewall};
use crate::lb::ipv6::{
    self, ILB_IPV6_HEALTH_CHECK_RANGE, IP_VERSION_IPV6, ensure_firewall, family_source_ranges,
};
use crate::naming::{self, IlbNames, Ipv6Names};
use crate::objects::action::Action;
use crate::objects::observed::IlbObserved;
use crate::objects::{Firewall, ForwardingRule, SCHEME_INTERNAL};

/// ingress-gce builds every ILB rule in the Premium tier.
const TIER_PREMIUM: &str = "PREMIUM";

/// The IPv6 rule (ingress-gce forwarding_rules_ipv6.go buildExpectedIPv6ForwardingRule): the
/// IPv4 rule's protocol, ports, backend service, network, subnetwork and global access, under the
/// `-ipv6` name; `ip` as given (GCE takes an internal IPv6 rule's bare address).
pub(crate) fn ipv6_forwarding_rule(d: &DesiredIlb, ip: &str) -> ForwardingRule {
    ForwardingRule {
        name: d.names.ipv6.rule.clone(),
        // ingress-gce MakeL4IPv6ForwardingRuleDescription.
        description: format!(
            "{{\"networking.gke.io/service-name\":{}}}",
            naming::json_str(&d.spec.base.service_name)
        ),
        ip_address: ip.to_owned(),
        ip_version: IP_VERSION_IPV6.to_owned(),
        network_tier: TIER_PREMIUM.to_owned(),
        ..d.forwarding_rule.clone()
    }
}

/// The IPv6 nodes firewall (ingress-gce l4ipv6.go ensureIPv6NodesFirewall): the IPv4 one's ports
/// and targets, to the IPv6 address, from the Service's IPv6 source ranges only, else anywhere.
pub(crate) fn ipv6_firewall(d: &DesiredIlb, cfg: &Config, ip: &str) -> Firewall {
    Firewall {
        name: d.names.ipv6.firewall.clone(),
        source_ranges: family_source_ranges(&d.spec.base.source_ranges, true),
        ..traffic_firewall(d, cfg, ip)
    }
}

fn health_check_firewall_name(d: &DesiredIlb) -> &String {
    if d.spec.shared_health_check() {
        &d.names.ipv6.shared_health_check_firewall
    } else {
        &d.names.ipv6.local_health_check_firewall
    }
}

/// The health-check firewall for GCE's ILB IPv6 probers (healthchecksl4.go ensureIPv6Firewall
/// with `L4ILBIPv6HCRange`).
pub(crate) fn ipv6_health_check_firewall(d: &DesiredIlb) -> Firewall {
    ipv6::health_check_firewall(
        &d.health_check_firewall,
        health_check_firewall_name(d),
        ILB_IPV6_HEALTH_CHECK_RANGE,
    )
}

/// The IPv6 rule, its address and firewalls. `have_rule`: GCE's rule, or None when the plan
/// deletes it first (a protocol change). Returns the rule's bare IPv6, or None while GCE picks the
/// IP of a new reservation (execute and plan again).
pub(crate) fn plan_ipv6(
    d: &DesiredIlb,
    o: &IlbObserved,
    have_rule: Option<&ForwardingRule>,
    cfg: &Config,
    actions: &mut Vec<Action>,
) -> Option<String> {
    let rule = ipv6::RulePlan {
        name: &d.names.ipv6.rule,
        subnetwork: &d.forwarding_rule.subnetwork,
        address_type: SCHEME_INTERNAL,
        network_tier: "",
        address_description: naming::service_description(&d.spec.base.service_name),
        build: |ip: &str| ipv6_forwarding_rule(d, ip),
        equal: rules_equal,
        have_rule,
        have_address: o.ipv6_address.as_ref(),
    };
    let (ip, release) = ipv6::plan_rule(&rule, actions)?;
    let have_hc_fw = if d.spec.shared_health_check() {
        &o.ipv6_nodes_health_check_firewall
    } else {
        &o.ipv6_local_health_check_firewall
    };
    ensure_firewall(ipv6_firewall(d, cfg, &ip), o.ipv6_firewall.as_ref(), actions);
    ensure_firewall(ipv6_health_check_firewall(d), have_hc_fw.as_ref(), actions);
    actions.extend(release);
    Some(ip)
}

/// A Service no longer asking for IPv6 loses its IPv6 rule, reservation, nodes firewall and its
/// own check's IPv6 firewall (ingress-gce l4ipv6.go deleteIPv6ResourcesOnSync takes the rule and
/// nodes firewall; svcnet takes the own check's firewall too rather than leave it to the
/// Service's deletion). The shared check's serves other Services and goes with that check.
pub(crate) fn plan_unwanted_ipv6(names: &Ipv6Names, o: &IlbObserved, actions: &mut Vec<Action>) {
    plan_delete_ipv6(names, o, actions);
    if o.ipv6_local_health_check_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.local_health_check_firewall.clone(),
        });
    }
}

/// Deletes the IPv6 rule, our IPv6 reservation and the IPv6 nodes firewall, those that exist.
pub(crate) fn plan_delete_ipv6(names: &Ipv6Names, o: &IlbObserved, actions: &mut Vec<Action>) {
    if o.ipv6_forwarding_rule.is_some() {
        actions.push(Action::DeleteForwardingRule {
            name: names.rule.clone(),
        });
    }
    if o.ipv6_address.is_some() {
        actions.push(Action::DeleteAddress {
            name: names.rule.clone(),
        });
    }
    if o.ipv6_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: names.firewall.clone(),
        });
    }
}

/// The IPv6 status annotations ingress-gce writes on an ILB Service (l4ipv6.go): the rule by its
/// protocol, the nodes firewall, the health-check firewall. svcnet's internal LBs write only
/// these: their IPv4 objects keep cloud-provider-gcp's names, which writes none.
pub(crate) fn ipv6_status_annotations(names: &IlbNames, spec: &IlbSpec) -> BTreeMap<&'static str, String> {
    let hc_firewall = if spec.shared_health_check() {
        &names.ipv6.shared_health_check_firewall
    } else {
        &names.ipv6.local_health_check_firewall
    };
    BTreeMap::from([
        (
            ipv6::rule_annotation_key(&spec.base.protocol),
            names.ipv6.rule.clone(),
        ),
        (ipv6::ANN_FIREWALL_RULE_IPV6, names.ipv6.firewall.clone()),
        (ipv6::ANN_FIREWALL_RULE_FOR_HC_IPV6, hc_firewall.clone()),
    ])
}

/// Every key [`ipv6_status_annotations`] may write: a sync sets those of a converged IPv6 half
/// and removes the others.
pub(crate) const IPV6_STATUS_ANNOTATION_KEYS: [&str; 5] = [
    ipv6::ANN_TCP_FORWARDING_RULE_IPV6,
    ipv6::ANN_UDP_FORWARDING_RULE_IPV6,
    ipv6::ANN_L3_FORWARDING_RULE_IPV6,
    ipv6::ANN_FIREWALL_RULE_IPV6,
    ipv6::ANN_FIREWALL_RULE_FOR_HC_IPV6,
];

#[cfg(test)]
mod tests;
