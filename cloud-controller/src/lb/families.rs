//! The IP families a LoadBalancer Service asks for (`spec.ipFamilies`), and the kind that can
//! serve only IPv4: GCE target pools are IPv4-only; svcnet's backend-service NetLBs and internal
//! LBs build ingress-gce's `-ipv6` objects too. An IPv6-only Service given to a target pool is
//! refused with a Warning instead of an IPv4 LB
//! the proxy would not forward (it programs an IPv6-only Service in the IPv6 family only); a
//! dual-stack one gets its IPv4 LB.

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

/// Whether GCE refused an IPv6 address for the subnetwork it names: the subnetwork has no IPv6
/// range of the address's access type, EXTERNAL or INTERNAL (400 on `resource.subnetwork`, as the
/// fake GCE words it; real GCE's wording is UNCONFIRMED) or does not exist.
pub(crate) fn is_missing_ipv6_range(status: Option<u16>, message: &str) -> bool {
    status == Some(400)
        && (message.contains("does not have an EXTERNAL IPv6 range")
            || message.contains("does not have an INTERNAL IPv6 range")
            || message.contains("referenced subnetwork resource cannot be found"))
}

/// ingress-gce's user error for an IPv6 Service whose subnetwork has no external IPv6 range
/// (l4netlbipv6.go serviceSubnetHasExternalIPv6Range), naming the Service and `spec.ipFamilies`.
pub(crate) fn no_external_ipv6_range(object: &str, subnetwork: &str) -> Error {
    Error::NoExternalIpv6Range {
        object: object.to_owned(),
        subnetwork: subnetwork.to_owned(),
    }
}

/// ingress-gce's user error for an internal IPv6 Service whose subnetwork has no internal IPv6
/// range (l4ipv6.go serviceSubnetHasInternalIPv6Range), naming the Service and `spec.ipFamilies`.
pub(crate) fn no_internal_ipv6_range(object: &str, subnetwork: &str) -> Error {
    Error::NoInternalIpv6Range {
        object: object.to_owned(),
        subnetwork: subnetwork.to_owned(),
    }
}

/// The status ingress IPs of a dual-stack LB in `spec.ipFamilies` order (the primary family
/// first); a family without an IP yet, or no longer asked for, is left out.
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
