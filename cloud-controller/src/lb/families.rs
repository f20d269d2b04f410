//! The IP families a LoadBalancer Service asks for (`spec.ipFamilies`), and the kinds that can
//! serve only IPv4: GCE target pools are IPv4-only, cloud-provider-gcp's internal LB builds IPv4
//! objects only, and svcnet does not build ingress-gce's `-ipv6` objects of a backend-service
//! NetLB yet. An IPv6-only Service given to one of them is refused with a Warning instead of an
//! IPv4 LB the proxy would not forward (it programs an IPv6-only Service in the IPv6 family only);
//! a dual-stack one gets its IPv4 LB.

use k8s_openapi::api::core::v1::Service;

use crate::error::{Error, Result};

/// `IPv4` and `IPv6` as Kubernetes spells them in `spec.ipFamilies`.
pub(crate) const IPV4: &str = "IPv4";
pub(crate) const IPV6: &str = "IPv6";

/// Which families the Service asks for; no `spec.ipFamilies` means IPv4 (ingress-gce
/// l4/utils/ipfamily.go treats an empty list the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Families {
    pub v4: bool,
    pub v6: bool,
}

pub(crate) fn families(service: &Service) -> Families {
    let list = service
        .spec
        .as_ref()
        .and_then(|s| s.ip_families.as_deref())
        .unwrap_or_default();
    if list.is_empty() {
        return Families { v4: true, v6: false };
    }
    Families {
        v4: list.iter().any(|f| f == IPV4),
        v6: list.iter().any(|f| f == IPV6),
    }
}

/// Err for a Service without IPv4 in `spec.ipFamilies`; `kind` names the LB kind for the event,
/// with its article ("a target-pool").
pub(crate) fn require_ipv4(service: &Service, object: &str, kind: &'static str) -> Result<()> {
    if families(service).v4 {
        return Ok(());
    }
    Err(Error::Ipv6Unsupported {
        object: object.to_owned(),
        kind,
    })
}

/// GCE subnetwork `stackType`s that carry an IPv6 range (ingress-gce utils.go SubnetHasIPv6Range).
const IPV6_STACK_TYPES: [&str; 2] = ["IPV4_IPV6", "IPV6_ONLY"];
/// `ipv6AccessType` of a subnetwork whose IPv6 range is reachable from the internet.
const IPV6_ACCESS_EXTERNAL: &str = "EXTERNAL";

/// Ok when the subnetwork (its `stackType` and `ipv6AccessType` as GCE returns them) can hold an
/// external IPv6 forwarding rule; else the user error ingress-gce raises, naming the Service and
/// the subnetwork.
#[cfg_attr(not(test), expect(dead_code, reason = "the RBS IPv6 round is not wired yet"))]
pub(crate) fn require_external_ipv6_subnet(
    object: &str,
    subnetwork: &str,
    stack_type: &str,
    ipv6_access_type: &str,
) -> Result<()> {
    if IPV6_STACK_TYPES.contains(&stack_type) && ipv6_access_type == IPV6_ACCESS_EXTERNAL {
        return Ok(());
    }
    Err(Error::NoExternalIpv6Range {
        object: object.to_owned(),
        subnetwork: subnetwork.to_owned(),
    })
}

/// The status ingress IPs of a dual-stack LB in `spec.ipFamilies` order (the primary family
/// first); a family without an IP yet, or no longer asked for, is left out.
#[cfg_attr(not(test), expect(dead_code, reason = "the RBS IPv6 round is not wired yet"))]
pub(crate) fn ordered_ingress_ips(service: &Service, v4: Option<&str>, v6: Option<&str>) -> Vec<String> {
    let v6_first = service
        .spec
        .as_ref()
        .and_then(|s| s.ip_families.as_deref())
        .and_then(|l| l.first())
        .is_some_and(|f| f == IPV6);
    let fam = families(service);
    let v4 = v4.filter(|_| fam.v4);
    let v6 = v6.filter(|_| fam.v6);
    let ordered = if v6_first { [v6, v4] } else { [v4, v6] };
    ordered.into_iter().flatten().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests;
