//! What the IPv6 half of a dual-stack or IPv6-only LB looks like for both backend-service kinds
//! (internal and RBS NetLB), as ingress-gce builds them (pkg/loadbalancers/l4ipv6.go,
//! l4netlbipv6.go, forwarding_rules_ipv6.go, utils/sourceranges.go): the `-ipv6` rule held by a
//! short-lived address reservation, the source ranges split by family, the health-check firewall
//! for GCE's IPv6 probers, and the `-ipv6` status annotation keys. Each kind builds its objects
//! from its IPv4 ones and calls these; the kinds stay peers.

use crate::lb::drift;
use crate::objects::action::Action;
use crate::objects::{self, Address, Firewall, ForwardingRule};

/// ingress-gce IPVersionIPv6.
pub(crate) const IP_VERSION_IPV6: &str = "IPV6";

/// ingress-gce allowAllIPv4Range / allowAllIPv6Range (sic: `0::0/0`).
pub(crate) const ALLOW_ALL_IPV4: &str = "0.0.0.0/0";
pub(crate) const ALLOW_ALL_IPV6: &str = "0::0/0";

/// GCE's IPv6 health-check probers by LB type (ingress-gce healthchecksl4.go `L4NetLBIPv6HCRange`
/// and `L4ILBIPv6HCRange`, picked by `getIPv6HCFirewallSourceRanges`).
pub(crate) const NETLB_IPV6_HEALTH_CHECK_RANGE: &str = "2600:1901:8001::/48";
pub(crate) const ILB_IPV6_HEALTH_CHECK_RANGE: &str = "2600:2d00:1:b029::/64";

/// Status annotations of the IPv6 objects (ingress-gce l4/annotations/service.go).
pub(crate) const ANN_TCP_FORWARDING_RULE_IPV6: &str = "service.kubernetes.io/tcp-forwarding-rule-ipv6";
pub(crate) const ANN_UDP_FORWARDING_RULE_IPV6: &str = "service.kubernetes.io/udp-forwarding-rule-ipv6";
pub(crate) const ANN_L3_FORWARDING_RULE_IPV6: &str = "service.kubernetes.io/l3-forwarding-rule-ipv6";
pub(crate) const ANN_FIREWALL_RULE_IPV6: &str = "service.kubernetes.io/firewall-rule-ipv6";
pub(crate) const ANN_FIREWALL_RULE_FOR_HC_IPV6: &str = "service.kubernetes.io/firewall-rule-for-hc-ipv6";

/// The IPv6 rule's annotation key by its protocol (ingress-gce forwardingrules.AnnotationKey).
pub(crate) fn rule_annotation_key(protocol: &str) -> &'static str {
    match protocol {
        "TCP" => ANN_TCP_FORWARDING_RULE_IPV6,
        "UDP" => ANN_UDP_FORWARDING_RULE_IPV6,
        _ => ANN_L3_FORWARDING_RULE_IPV6,
    }
}

/// ingress-gce utils/sourceranges.go IPv4ServiceSourceRanges / IPv6ServiceSourceRanges: the
/// entries of one family, else that family's whole space (even when the other family has
/// entries).
pub(crate) fn family_source_ranges(ranges: &[String], v6: bool) -> Vec<String> {
    let mine: Vec<String> = ranges
        .iter()
        .filter(|r| matches!(r.parse::<ipnet::IpNet>(), Ok(ipnet::IpNet::V6(_))) == v6)
        .cloned()
        .collect();
    if !mine.is_empty() {
        return mine;
    }
    let all = if v6 { ALLOW_ALL_IPV6 } else { ALLOW_ALL_IPV4 };
    vec![all.to_owned()]
}

/// An address without its prefix length: GCE keeps an IPv6 rule's address as `ADDR/96`.
pub(crate) fn bare(ip: &str) -> &str {
    ip.split_once('/').map_or(ip, |(addr, _)| addr)
}

/// Creates `want`, or patches GCE's copy when it differs.
pub(crate) fn ensure_firewall(want: Firewall, have: Option<&Firewall>, actions: &mut Vec<Action>) {
    match have {
        None => actions.push(Action::CreateFirewall(want)),
        Some(have) if drift::firewall_differs(&want, have, None) => actions.push(Action::PatchFirewall(want)),
        Some(_) => {}
    }
}

/// The IPv6 health-check firewall: the kind's IPv4 one under its `-ipv6` name, from `range`
/// (ingress-gce healthchecksl4.go ensureIPv6Firewall).
pub(crate) fn health_check_firewall(v4: &Firewall, name: &str, range: &str) -> Firewall {
    Firewall {
        name: name.to_owned(),
        source_ranges: vec![range.to_owned()],
        ..v4.clone()
    }
}

/// What the shared rule planner needs of one kind's IPv6 rule.
pub(crate) struct RulePlan<'a, B, E>
where
    B: Fn(&str) -> ForwardingRule,
    E: Fn(&ForwardingRule, &ForwardingRule) -> bool,
{
    /// The rule's name, also its reservation's.
    pub name: &'a str,
    /// Where GCE takes the address from.
    pub subnetwork: &'a str,
    /// The reservation's address type and tier (the kind's scheme).
    pub address_type: &'a str,
    pub network_tier: &'a str,
    pub address_description: String,
    /// The wanted rule for an address as the kind writes it (bare, or GCE's `ADDR/96`).
    pub build: B,
    /// The kind's rule equality (ingress-gce's, IP aside).
    pub equal: E,
    pub have_rule: Option<&'a ForwardingRule>,
    pub have_address: Option<&'a Address>,
}

/// The IPv6 rule and its address (ingress-gce address manager HoldAddress / ReleaseAddress around
/// ensureIPv6ForwardingRule): the IP of the existing rule, else our reservation's, else a new
/// reservation whose IP GCE picks. Pushes the reservation, rule delete and create; returns the
/// rule's bare IPv6 and the release to push last, or None while GCE picks the IP (execute and
/// plan again).
pub(crate) fn plan_rule<B, E>(
    p: &RulePlan<'_, B, E>,
    actions: &mut Vec<Action>,
) -> Option<(String, Option<Action>)>
where
    B: Fn(&str) -> ForwardingRule,
    E: Fn(&ForwardingRule, &ForwardingRule) -> bool,
{
    let have_ip = p
        .have_rule
        .map(|f| bare(&f.ip_address).to_owned())
        .filter(|ip| !ip.is_empty());
    let release = || Action::DeleteAddress {
        name: p.name.to_owned(),
    };
    // Compared with GCE's copy as GCE wrote it, so a bare address and its `/96` match.
    let equal = p.have_rule.is_some_and(|h| {
        let want = (p.build)(&h.ip_address);
        (p.equal)(h, &want)
            && h.ip_version == IP_VERSION_IPV6
            && objects::same_link(&h.subnetwork, p.subnetwork)
    });
    let ours = p.have_address.and_then(|a| a.address.clone());
    let (ip, release) = if equal {
        (have_ip.unwrap_or_default(), p.have_address.map(|_| release()))
    } else if let Some(ip) = ours.filter(|ip| have_ip.as_ref().is_none_or(|h| h == ip)) {
        (ip, Some(release()))
    } else {
        if p.have_address.is_some() {
            actions.push(release());
        }
        actions.push(Action::CreateAddress(Address {
            name: p.name.to_owned(),
            description: p.address_description.clone(),
            address: have_ip.clone(),
            network_tier: p.network_tier.to_owned(),
            address_type: p.address_type.to_owned(),
            subnetwork: p.subnetwork.to_owned(),
            ip_version: IP_VERSION_IPV6.to_owned(),
        }));
        (have_ip?, Some(release()))
    };
    if !equal {
        if p.have_rule.is_some() {
            actions.push(Action::DeleteForwardingRule {
                name: p.name.to_owned(),
            });
        }
        actions.push(Action::CreateForwardingRule((p.build)(&ip)));
    }
    Some((ip, release))
}

#[cfg(test)]
mod tests;
