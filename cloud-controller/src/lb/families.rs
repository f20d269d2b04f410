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

#[cfg(test)]
mod tests;
