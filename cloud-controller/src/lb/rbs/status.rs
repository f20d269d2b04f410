//! The status annotations ingress-gce writes on an RBS Service (l4/annotations/service.go,
//! l4netlbipv6.go): GCE object names, one key per object of the families the Service asks for.

use std::collections::BTreeMap;

use super::ipv6::ipv6_health_check_firewall_name;
use super::*;

/// The status annotations of a converged RBS NetLB (key -> GCE object name): the shared objects,
/// then those of each family the Service asks for.
pub(crate) fn status_annotations(d: &DesiredRbs) -> BTreeMap<&'static str, String> {
    let mut ann = BTreeMap::from([
        (ANN_BACKEND_SERVICE, d.names.backend.clone()),
        (ANN_HEALTHCHECK, d.health_check.name.clone()),
    ]);
    if d.spec.ipv4 {
        // ingress-gce forwardingrules.AnnotationKey: by the rule's protocol.
        let rule_key = match d.spec.protocol.as_str() {
            "TCP" => ANN_TCP_FORWARDING_RULE,
            "UDP" => ANN_UDP_FORWARDING_RULE,
            _ => ANN_L3_FORWARDING_RULE,
        };
        ann.insert(ANN_FIREWALL_RULE, d.names.backend.clone());
        ann.insert(ANN_FIREWALL_RULE_FOR_HC, d.health_check_firewall.name.clone());
        ann.insert(rule_key, d.names.lb.clone());
    }
    if d.spec.ipv6 {
        ann.extend(ipv6_status_annotations(d));
    }
    ann
}

/// The status annotations of the IPv6 rule and nodes firewall (ingress-gce l4netlbipv6.go), to
/// merge with [`status_annotations`] when the Service asks for IPv6.
pub(crate) fn ipv6_status_annotations(d: &DesiredRbs) -> BTreeMap<&'static str, String> {
    let rule_key = crate::lb::ipv6::rule_annotation_key(&d.spec.protocol);
    BTreeMap::from([
        (rule_key, d.names.ipv6.rule.clone()),
        (ANN_FIREWALL_RULE_IPV6, d.names.ipv6.firewall.clone()),
        (
            ANN_FIREWALL_RULE_FOR_HC_IPV6,
            ipv6_health_check_firewall_name(d).clone(),
        ),
    ])
}
