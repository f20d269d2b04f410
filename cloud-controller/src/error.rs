//! Errors of the pure domain. Every variant names the Kubernetes object and the field that made the
//! desired state impossible, so the controller can turn it into a Warning event
//! (`SyncLoadBalancerFailed`) without calling GCE at all.
//!
//! Never imports: crate::lb, crate::routes, crate::nodes, crate::gce, crate::controllers.

use thiserror::Error;

/// `object` is always rendered as `Kind ns/name` (or `Kind name` for cluster-scoped objects).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    /// Upstream rejects LoadBalancer Services whose ports mix protocols (KEP-1435 is not supported
    /// by target-pool load balancers).
    #[error("{object}: spec.ports: mixed protocols are not supported for LoadBalancer ({first} and {other})")]
    MixedProtocols {
        object: String,
        first: String,
        other: String,
    },

    #[error("{object}: {field}: protocol {value:?} is not supported, only TCP and UDP")]
    UnsupportedProtocol {
        object: String,
        field: String,
        value: String,
    },

    #[error("{object}: spec.ports: no ports specified for GCE load balancer")]
    NoPorts { object: String },

    #[error("{object}: {field}: {value:?} is not a valid CIDR (expected e.g. 10.0.0.0/24)")]
    InvalidSourceRange {
        object: String,
        field: String,
        value: String,
    },

    #[error(
        "{object}: metadata.annotations[{field}]: unsupported network tier {value:?} (Standard or Premium)"
    )]
    InvalidNetworkTier {
        object: String,
        field: String,
        value: String,
    },

    #[error("{object}: {field}: {message}")]
    RequestedIp {
        object: String,
        field: String,
        message: String,
    },

    #[error("{object}: {field} is missing")]
    MissingField { object: String, field: String },

    /// Upstream refuses to build a load balancer without hosts ("cannot EnsureLoadBalancer() with no hosts").
    #[error("{object}: no eligible nodes for the load balancer")]
    NoEligibleNodes { object: String },

    #[error("{object}: {field}: GCE name {name:?} is invalid (must match [a-z]([-a-z0-9]{{0,61}}[a-z0-9])?)")]
    InvalidName {
        object: String,
        field: String,
        name: String,
    },

    #[error("{object}: {field}: {value:?} is not a valid GCE provider ID (gce://project/zone/instance)")]
    InvalidProviderId {
        object: String,
        field: String,
        value: String,
    },

    #[error("{object}: {field}: {message}")]
    InvalidNodeAddress {
        object: String,
        field: String,
        message: String,
    },

    /// An IPv6-only Service on a kind that builds IPv4 objects only (see lb/families.rs).
    #[error(
        "{object}: spec.ipFamilies: an IPv6-only Service cannot be served by {kind} load balancer, which is IPv4-only in svcnet; add IPv4 to spec.ipFamilies (the LB then serves IPv4)"
    )]
    Ipv6Unsupported { object: String, kind: &'static str },

    /// ingress-gce l4netlbipv6.go's user error, with the Service named first.
    #[error(
        "{object}: subnet {subnetwork} does not have external IPv6 ranges, required for an external IPv6 Service. You can specify an external IPv6 subnet using the \"networking.gke.io/load-balancer-subnet\" annotation on the Service"
    )]
    NoExternalIpv6Range { object: String, subnetwork: String },

    /// ingress-gce l4ipv6.go's user error (serviceSubnetHasInternalIPv6Range), after the Service
    /// and the field that asked for IPv6.
    #[error(
        "{object}: spec.ipFamilies: subnet {subnetwork} does not have internal IPv6 ranges, required for an internal IPv6 Service. You can specify an internal IPv6 subnet using the \"networking.gke.io/internal-load-balancer-subnet\" annotation on the Service"
    )]
    NoInternalIpv6Range { object: String, subnetwork: String },

    /// ingress-gce forwarding_rules_ipv6.go: GCE has no Standard-tier IPv6 NetLB.
    #[error(
        "{object}: metadata.annotations[cloud.google.com/network-tier]: network tier Standard is not supported for IPv6 External Load Balancer; use Premium or remove IPv6 from spec.ipFamilies"
    )]
    Ipv6StandardTier { object: String },

    #[error("{object}: {field}: {value:?} is not a valid pod CIDR")]
    InvalidPodCidr {
        object: String,
        field: String,
        value: String,
    },
}

impl Error {
    /// Low-cardinality label for metrics (`svcnet_cloud_controller_errors_total{error=...}`), in the
    /// style of kube-rs/controller-rs: one fixed string per variant, never data from the object.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::MixedProtocols { .. } => "mixed_protocols",
            Error::UnsupportedProtocol { .. } => "unsupported_protocol",
            Error::NoPorts { .. } => "no_ports",
            Error::InvalidSourceRange { .. } => "invalid_source_range",
            Error::InvalidNetworkTier { .. } => "invalid_network_tier",
            Error::RequestedIp { .. } => "requested_ip",
            Error::MissingField { .. } => "missing_field",
            Error::NoEligibleNodes { .. } => "no_eligible_nodes",
            Error::InvalidName { .. } => "invalid_name",
            Error::InvalidProviderId { .. } => "invalid_provider_id",
            Error::InvalidNodeAddress { .. } => "invalid_node_address",
            Error::InvalidPodCidr { .. } => "invalid_pod_cidr",
            Error::Ipv6Unsupported { .. } => "ipv6_unsupported",
            Error::NoExternalIpv6Range { .. } => "no_external_ipv6_range",
            Error::NoInternalIpv6Range { .. } => "no_internal_ipv6_range",
            Error::Ipv6StandardTier { .. } => "ipv6_standard_tier",
        }
    }

    /// The field path the error is about, for the Warning event message and for tests.
    pub fn field(&self) -> &str {
        match self {
            Error::MixedProtocols { .. } | Error::NoPorts { .. } => "spec.ports",
            Error::NoEligibleNodes { .. } => "nodes",
            Error::Ipv6Unsupported { .. }
            | Error::NoExternalIpv6Range { .. }
            | Error::NoInternalIpv6Range { .. } => "spec.ipFamilies",
            Error::Ipv6StandardTier { .. } => "metadata.annotations[cloud.google.com/network-tier]",
            Error::UnsupportedProtocol { field, .. }
            | Error::InvalidSourceRange { field, .. }
            | Error::InvalidNetworkTier { field, .. }
            | Error::RequestedIp { field, .. }
            | Error::MissingField { field, .. }
            | Error::InvalidName { field, .. }
            | Error::InvalidProviderId { field, .. }
            | Error::InvalidNodeAddress { field, .. }
            | Error::InvalidPodCidr { field, .. } => field,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
