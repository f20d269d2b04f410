//! The IPv6 half of a dual-stack or IPv6-only RBS NetLB, as ingress-gce builds it
//! (pkg/l4/resources/l4netlbipv6.go, forwarding_rules_ipv6.go): an IPv6 address reserved in the
//! Service's subnetwork while the `a<uid>-ipv6` rule is made and released after, the rule
//! (`ipVersion: IPV6`, `ADDR/96`) to the same backend service, the `-ipv6` nodes firewall and the
//! health-check firewall for GCE's IPv6 probers; and its removal when the Service drops IPv6.

use super::{DesiredRbs, nodes_firewall, rules_equal};
use crate::config::Config;
pub(crate) use crate::lb::ipv6::ensure_firewall;
use crate::lb::ipv6::{self, IP_VERSION_IPV6, NETLB_IPV6_HEALTH_CHECK_RANGE, family_source_ranges};
use crate::naming::l4::{RbsNames, l4_description};
use crate::objects::action::Action;
use crate::objects::observed::RbsObserved;
use crate::objects::{Firewall, ForwardingRule, SCHEME_EXTERNAL, TIER_STANDARD};

/// The prefix an external IPv6 rule's address carries.
const IPV6_RULE_PREFIX: &str = "/96";

/// The IPv6 rule of a dual-stack or IPv6-only NetLB (ingress-gce l4netlbipv6.go
/// buildExpectedIPv6ForwardingRule): `a<uid>-ipv6` to the same backend service, on
/// `subnetwork_url` (whose range GCE takes the address from), `ip` as `ADDR/96` since GCE refuses
/// an external IPv6 rule's bare address. Its description names the Service only. Standard tier
/// has no IPv6 NetLB: an error, before any call.
pub(crate) fn ipv6_forwarding_rule_for(
    d: &DesiredRbs,
    ip: &str,
    subnetwork_url: &str,
) -> crate::error::Result<ForwardingRule> {
    if d.spec.network_tier == TIER_STANDARD {
        return Err(crate::error::Error::Ipv6StandardTier {
            object: d.spec.object.clone(),
        });
    }
    let ip_address = if ip.is_empty() || ip.ends_with(IPV6_RULE_PREFIX) {
        ip.to_owned()
    } else {
        format!("{ip}{IPV6_RULE_PREFIX}")
    };
    Ok(ForwardingRule {
        name: d.names.ipv6.rule.clone(),
        description: format!(
            "{{\"networking.gke.io/service-name\":{}}}",
            crate::naming::json_str(&d.spec.service_name)
        ),
        ip_address,
        ip_version: IP_VERSION_IPV6.to_owned(),
        subnetwork: subnetwork_url.to_owned(),
        ..d.forwarding_rule.clone()
    })
}

/// The IPv6 nodes firewall (ingress-gce l4netlbipv6.go ensureIPv6NodesFirewall): `…-ipv6`, the
/// same ports as the IPv4 one, to the IPv6 rule's address without its `/96`, from the Service's
/// IPv6 source ranges only (IPv6ServiceSourceRanges), else from anywhere.
pub(crate) fn ipv6_nodes_firewall(d: &DesiredRbs, cfg: &Config, ip: &str) -> Firewall {
    let bare = ipv6::bare(ip);
    Firewall {
        name: d.names.ipv6.firewall.clone(),
        // The IPv6 allow rule never carries spec.loadBalancerIP (ingress-gce ensureIPv6NodesFirewall).
        description: l4_description(&d.spec.service_name, ""),
        source_ranges: family_source_ranges(&d.spec.source_ranges, true),
        destination_ranges: vec![bare.to_owned()],
        ..nodes_firewall(d, cfg, bare)
    }
}

pub(crate) fn ipv6_health_check_firewall_name(d: &DesiredRbs) -> &String {
    if d.shared_health_check() {
        &d.names.ipv6.shared_health_check_firewall
    } else {
        &d.names.ipv6.local_health_check_firewall
    }
}

/// The health-check firewall for the IPv6 probers (ingress-gce healthchecksl4.go
/// ensureIPv6Firewall): as the IPv4 one, under its `-ipv6` name, from the IPv6 probe range.
pub(crate) fn ipv6_health_check_firewall(d: &DesiredRbs) -> Firewall {
    ipv6::health_check_firewall(
        &d.health_check_firewall,
        ipv6_health_check_firewall_name(d),
        NETLB_IPV6_HEALTH_CHECK_RANGE,
    )
}

/// The subnetwork the IPv6 address comes from: the `networking.gke.io/load-balancer-subnet`
/// annotation's, else the cluster's (ingress-gce l4netlbipv6.go ipv6SubnetURL).
pub(crate) fn ipv6_subnetwork_url(d: &DesiredRbs, cfg: &Config) -> String {
    cfg.subnetwork_url(d.spec.subnet.as_deref().unwrap_or(&cfg.subnetwork))
}

/// The IPv6 rule, its address and firewalls (ingress-gce ensureIPv6ForwardingRule with the
/// address manager, [`crate::lb::ipv6::plan_rule`]). Returns the rule's bare IPv6, or None while
/// GCE picks the IP of a new reservation (execute and plan again). Standard tier is refused
/// before planning ([`ipv6_forwarding_rule_for`]).
pub(crate) fn plan_ipv6(
    d: &DesiredRbs,
    o: &RbsObserved,
    cfg: &Config,
    actions: &mut Vec<Action>,
) -> Option<String> {
    let subnet = ipv6_subnetwork_url(d, cfg);
    ipv6_forwarding_rule_for(d, "", &subnet).ok()?;
    let rule = ipv6::RulePlan {
        name: &d.names.ipv6.rule,
        subnetwork: &subnet,
        address_type: SCHEME_EXTERNAL,
        network_tier: &d.spec.network_tier,
        address_description: l4_description(&d.spec.service_name, ""),
        build: |ip: &str| ipv6_forwarding_rule_for(d, ip, &subnet).unwrap_or_default(),
        equal: rules_equal,
        have_rule: o.ipv6_forwarding_rule.as_ref(),
        have_address: o.ipv6_address.as_ref(),
    };
    let (ip, release) = ipv6::plan_rule(&rule, actions)?;
    let have_hc_fw = if d.shared_health_check() {
        &o.ipv6_shared_health_check_firewall
    } else {
        &o.ipv6_local_health_check_firewall
    };
    for (want, have) in [
        (ipv6_nodes_firewall(d, cfg, &ip), &o.ipv6_nodes_firewall),
        (ipv6_health_check_firewall(d), have_hc_fw),
    ] {
        ensure_firewall(want, have.as_ref(), actions);
    }
    // The Service's own check went back to the shared one: its IPv6 firewall goes with it.
    if d.shared_health_check() && o.ipv6_local_health_check_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: d.names.ipv6.local_health_check_firewall.clone(),
        });
    }
    actions.extend(release);
    Some(ip)
}

/// A Service no longer asking for IPv6 loses its IPv6 rule, reservation, nodes firewall and its
/// own check's IPv6 firewall (ingress-gce l4netlb.go ensureDualStackResources deletes the family
/// not in spec.ipFamilies); the shared check's IPv6 firewall serves other Services and goes with
/// that check.
pub(crate) fn plan_unwanted_ipv6(d: &DesiredRbs, o: &RbsObserved, actions: &mut Vec<Action>) {
    plan_delete_ipv6(&d.names, o, actions);
    if o.ipv6_local_health_check_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: d.names.ipv6.local_health_check_firewall.clone(),
        });
    }
}

/// Deletes the IPv6 rule, our IPv6 reservation and the IPv6 nodes firewall, those that exist.
pub(crate) fn plan_delete_ipv6(names: &RbsNames, o: &RbsObserved, actions: &mut Vec<Action>) {
    let n = &names.ipv6;
    if o.ipv6_forwarding_rule.is_some() {
        actions.push(Action::DeleteForwardingRule { name: n.rule.clone() });
    }
    if o.ipv6_address.is_some() {
        actions.push(Action::DeleteAddress { name: n.rule.clone() });
    }
    if o.ipv6_nodes_firewall.is_some() {
        actions.push(Action::DeleteFirewall {
            name: n.firewall.clone(),
        });
    }
}
