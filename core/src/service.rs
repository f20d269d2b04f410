//! Views of a Kubernetes `Service` that both binaries need, with upstream's semantics.

use ipnet::IpNet;
use k8s_openapi::api::core::v1::Service;

/// kube-proxy's health check server port (GCE's shared node health check probes it).
pub const HEALTHZ_PORT: u16 = 10256;
/// Path of the node health check.
pub const HEALTHZ_PATH: &str = "/healthz";
/// Legacy annotation that lists load balancer source ranges, comma separated.
pub const LB_SOURCE_RANGES_ANNOTATION: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";
/// Services with this label belong to another proxy and are ignored.
pub const SERVICE_PROXY_NAME_LABEL: &str = "service.kubernetes.io/service-proxy-name";
/// Services with this label are treated as headless (no proxying).
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// Field name used in errors when the ranges come from the spec.
pub const LB_SOURCE_RANGES_FIELD: &str = "spec.loadBalancerSourceRanges";

/// A load balancer source range that is not a CIDR.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("service {service}: invalid {field} entry {value:?}: {reason}")]
pub struct SourceRangeError {
    /// `ns/name`
    pub service: String,
    /// `spec.loadBalancerSourceRanges` or the annotation name.
    pub field: String,
    /// The offending entry, trimmed.
    pub value: String,
    pub reason: String,
}

/// `ns/name`.
pub fn service_key(svc: &Service) -> String {
    format!(
        "{}/{}",
        svc.metadata.namespace.as_deref().unwrap_or_default(),
        svc.metadata.name.as_deref().unwrap_or_default()
    )
}

fn service_type(svc: &Service) -> &str {
    svc.spec
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("ClusterIP")
}

/// `spec.type == LoadBalancer`.
pub fn is_load_balancer(svc: &Service) -> bool {
    service_type(svc) == "LoadBalancer"
}

/// Whether traffic can reach the service from outside the cluster: NodePort, LoadBalancer, or
/// a ClusterIP service with externalIPs (upstream's `ExternallyAccessible`).
pub fn externally_accessible(svc: &Service) -> bool {
    match service_type(svc) {
        "LoadBalancer" | "NodePort" => true,
        "ClusterIP" => svc
            .spec
            .as_ref()
            .and_then(|s| s.external_ips.as_ref())
            .is_some_and(|ips| !ips.is_empty()),
        _ => false,
    }
}

/// externalTrafficPolicy: Local, which only means something for externally accessible
/// services (upstream's `ExternalPolicyLocal`).
pub fn external_policy_local(svc: &Service) -> bool {
    externally_accessible(svc)
        && svc
            .spec
            .as_ref()
            .and_then(|s| s.external_traffic_policy.as_deref())
            == Some("Local")
}

/// internalTrafficPolicy: Local.
pub fn internal_policy_local(svc: &Service) -> bool {
    svc.spec
        .as_ref()
        .and_then(|s| s.internal_traffic_policy.as_deref())
        == Some("Local")
}

/// The source ranges allowed to reach the load balancer. Empty means "no restriction".
///
/// `spec.loadBalancerSourceRanges` wins when it has entries; else the annotation (comma
/// separated). Entries are trimmed; any entry that is not a CIDR is an error naming the
/// service, the field and the value. Host bits are cleared (`10.0.0.1/8` -> `10.0.0.0/8`).
pub fn load_balancer_source_ranges(svc: &Service) -> Result<Vec<IpNet>, SourceRangeError> {
    let spec_ranges = svc
        .spec
        .as_ref()
        .and_then(|s| s.load_balancer_source_ranges.as_ref())
        .filter(|ranges| !ranges.is_empty());
    if let Some(ranges) = spec_ranges {
        return ranges
            .iter()
            .map(|r| parse_range(svc, LB_SOURCE_RANGES_FIELD, r))
            .collect();
    }
    let annotation = svc
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(LB_SOURCE_RANGES_ANNOTATION))
        .map(|v| v.trim())
        .filter(|v| !v.is_empty());
    match annotation {
        Some(value) => value
            .split(',')
            .map(|r| parse_range(svc, LB_SOURCE_RANGES_ANNOTATION, r))
            .collect(),
        None => Ok(Vec::new()),
    }
}

fn parse_range(svc: &Service, field: &str, raw: &str) -> Result<IpNet, SourceRangeError> {
    let value = raw.trim();
    value
        .parse::<IpNet>()
        .map(|net| net.trunc())
        .map_err(|e| SourceRangeError {
            service: service_key(svc),
            field: field.to_string(),
            value: value.to_string(),
            reason: e.to_string(),
        })
}

#[cfg(test)]
mod tests;
