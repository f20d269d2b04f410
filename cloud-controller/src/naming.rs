//! Names and descriptions of the GCE objects, as cloud-provider-gcp derives them
//! (gce_loadbalancer_naming.go, cloudprovider.DefaultLoadBalancerName, gce_routes.go).
//! Names are validated against GCE's RFC1035 pattern; descriptions are JSON built with real escaping.
//!
//! Never imports: crate::lb, crate::routes, crate::nodes, crate::gce, crate::controllers.

use crate::error::{Error, Result};

/// Node health check (shared by all ETP=Cluster load balancers of the cluster): kube-proxy's healthz.
pub(crate) const NODES_HEALTH_CHECK_PORT: i32 = 10256;
pub(crate) const NODES_HEALTH_CHECK_PATH: &str = "/healthz";
/// Route description; the route controller lists only routes carrying it.
pub(crate) const ROUTE_DESCRIPTION: &str = "k8s-node-route";
/// Upstream truncates the cluster name to this many characters for route names.
pub(crate) const ROUTE_CLUSTER_NAME_MAX: usize = 26;
const LB_NAME_MAX: usize = 32;
const GCE_NAME_MAX: usize = 63;

/// `a` + the Service UID without dashes, cut to 32 characters (cloudprovider.DefaultLoadBalancerName).
pub(crate) fn load_balancer_name(service_uid: &str) -> String {
    let mut name: String = std::iter::once('a')
        .chain(service_uid.chars().filter(|c| *c != '-'))
        .collect();
    if name.len() > LB_NAME_MAX {
        // UIDs are ASCII; cut on a char boundary anyway so hostile input cannot panic.
        let cut = name
            .char_indices()
            .nth(LB_NAME_MAX)
            .map_or(name.len(), |(i, _)| i);
        name.truncate(cut);
    }
    name
}

/// Traffic firewall of a load balancer.
pub(crate) fn firewall_name(lb_name: &str) -> String {
    format!("k8s-fw-{lb_name}")
}

/// Shared node health check.
pub(crate) fn nodes_health_check_name(cluster_id: &str) -> String {
    format!("k8s-{cluster_id}-node")
}

/// Firewall letting health checkers reach the node health check port.
pub(crate) fn nodes_health_check_firewall_name(cluster_id: &str) -> String {
    format!("{}-http-hc", nodes_health_check_name(cluster_id))
}

/// ETP=Local services get their own health check, named like the load balancer.
pub(crate) fn local_health_check_name(lb_name: &str) -> String {
    lb_name.to_owned()
}

pub(crate) fn local_health_check_firewall_name(lb_name: &str) -> String {
    format!("k8s-{lb_name}-http-hc")
}

/// Route names: the cluster name cut to 26 characters (bytes, as upstream slices the Go string),
/// `-`, the node UID. Upstream does no sanitising, so an invalid cluster name yields an invalid
/// route name; we reject it here instead of letting GCE do it.
pub(crate) fn route_prefix(cluster_name: &str) -> String {
    let mut cut = cluster_name.len().min(ROUTE_CLUSTER_NAME_MAX);
    while !cluster_name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-", &cluster_name[..cut])
}

pub(crate) fn route_name(cluster_name: &str, node_uid: &str) -> String {
    format!("{}{}", route_prefix(cluster_name), node_uid)
}

/// GCE resource names: `[a-z]([-a-z0-9]{0,61}[a-z0-9])?`.
pub(crate) fn is_valid_gce_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    bytes.len() <= GCE_NAME_MAX
        && first.is_ascii_lowercase()
        && (last.is_ascii_lowercase() || last.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

pub(crate) fn validate_gce_name(name: &str, object: &str, field: &str) -> Result<()> {
    if is_valid_gce_name(name) {
        Ok(())
    } else {
        Err(Error::InvalidName {
            object: object.to_owned(),
            field: field.to_owned(),
            name: name.to_owned(),
        })
    }
}

/// A JSON string literal (quotes included) with full escaping: service names reach GCE
/// descriptions and must never break the JSON, whatever the API server let through.
pub(crate) fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// Description of addresses, forwarding rules, target pools and health checks:
/// `{"kubernetes.io/service-name":"ns/name"}`.
pub(crate) fn service_description(service_name: &str) -> String {
    format!("{{\"kubernetes.io/service-name\":{}}}", json_str(service_name))
}

/// Description of the traffic firewall (and the ETP=Local health check firewall). Byte-identical
/// to upstream for ordinary names (including the space after the comma) so objects an upstream
/// controller created are not seen as drifted.
pub(crate) fn firewall_description(service_name: &str, ip: &str) -> String {
    format!(
        "{{\"kubernetes.io/service-name\":{}, \"kubernetes.io/service-ip\":{}}}",
        json_str(service_name),
        json_str(ip)
    )
}

/// Description of the shared node health check firewall.
pub(crate) fn cluster_description(cluster_id: &str) -> String {
    format!("{{\"kubernetes.io/cluster-id\":{}}}", json_str(cluster_id))
}

/// All names of one load balancer, so the I/O layer knows what to GET before planning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LbNames {
    pub lb: String,
    pub firewall: String,
    pub nodes_health_check: String,
    pub nodes_health_check_firewall: String,
    pub local_health_check: String,
    pub local_health_check_firewall: String,
}

impl LbNames {
    /// Validates every derived name; `object` names the Service for the error.
    pub(crate) fn new(service_uid: &str, cluster_id: &str, object: &str) -> Result<Self> {
        let lb = load_balancer_name(service_uid);
        let names = LbNames {
            firewall: firewall_name(&lb),
            nodes_health_check: nodes_health_check_name(cluster_id),
            nodes_health_check_firewall: nodes_health_check_firewall_name(cluster_id),
            local_health_check: local_health_check_name(&lb),
            local_health_check_firewall: local_health_check_firewall_name(&lb),
            lb,
        };
        validate_gce_name(&names.lb, object, "metadata.uid")?;
        validate_gce_name(&names.firewall, object, "metadata.uid")?;
        validate_gce_name(&names.local_health_check_firewall, object, "metadata.uid")?;
        validate_gce_name(&names.nodes_health_check, object, "config.cluster_id")?;
        validate_gce_name(&names.nodes_health_check_firewall, object, "config.cluster_id")?;
        Ok(names)
    }
}

/// Names of one internal load balancer (upstream gce_loadbalancer_naming.go, Internal section).
/// The backend service, the forwarding rule, the address and the ETP=Local health check are
/// named like the load balancer; the instance groups and the node health check are shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IlbNames {
    pub lb: String,
    /// `k8s-fw-<lb>`: traffic firewall (same name as the external LB's).
    pub firewall: String,
    /// Upstream's pre-1.17 traffic firewall name (the LB name): deleted where found.
    pub legacy_firewall: String,
    /// `k8s-ig--<cluster id>` (`k8s-ig` when the cluster id is empty), one per zone.
    pub instance_group: String,
    /// `k8s-<cluster id>-node` in the healthChecks collection (not the legacy httpHealthChecks).
    pub nodes_health_check: String,
    /// `k8s-<cluster id>-node-hc`.
    pub nodes_health_check_firewall: String,
    /// ETP=Local: the LB name, and `<lb>-hc` for its firewall.
    pub local_health_check: String,
    pub local_health_check_firewall: String,
    /// The IPv6 objects of a dual-stack or IPv6-only Service: each IPv4 name + `-ipv6`, as
    /// ingress-gce's ILB suffixes its own names (l4ipv6.go, healthchecksl4.go).
    pub ipv6: Ipv6Names,
}

/// Names of the IPv6 half of a backend-service LB (internal or RBS NetLB); the backend service
/// and health check are shared with the IPv4 half.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ipv6Names {
    /// The rule, and the address reserved while it is made.
    pub rule: String,
    /// The nodes (traffic) firewall.
    pub firewall: String,
    /// The health-check firewalls for GCE's IPv6 probers, of the shared check and the Service's own.
    pub shared_health_check_firewall: String,
    pub local_health_check_firewall: String,
}

/// The names both LB kinds give their firewalls and health checks, by role, so code that treats
/// them alike (the CloudLoadBalancer record) is written once.
pub(crate) trait GuardNames {
    /// Traffic firewall, nodes health check firewall, local health check firewall.
    fn firewalls(&self) -> [&String; 3];
    /// Nodes health check, local health check.
    fn health_checks(&self) -> [&String; 2];
}

macro_rules! guard_names {
    ($($names:ty),*) => {$(
        impl GuardNames for $names {
            fn firewalls(&self) -> [&String; 3] {
                [&self.firewall, &self.nodes_health_check_firewall, &self.local_health_check_firewall]
            }
            fn health_checks(&self) -> [&String; 2] {
                [&self.nodes_health_check, &self.local_health_check]
            }
        }
    )*};
}
guard_names!(LbNames, IlbNames);

/// Upstream makeInstanceGroupName.
pub(crate) fn instance_group_name(cluster_id: &str) -> String {
    if cluster_id.is_empty() {
        "k8s-ig".to_owned()
    } else {
        format!("k8s-ig--{cluster_id}")
    }
}

/// Upstream makeHealthCheckFirewallNameFromHC: the internal health check's firewall.
pub(crate) fn internal_health_check_firewall_name(health_check: &str) -> String {
    format!("{health_check}-hc")
}

impl IlbNames {
    pub(crate) fn new(service_uid: &str, cluster_id: &str, object: &str) -> Result<Self> {
        let lb = load_balancer_name(service_uid);
        let nodes_hc = nodes_health_check_name(cluster_id);
        let v6 = |name: &str| l4::suffixed(name, l4::IPV6_SUFFIX);
        let firewall = firewall_name(&lb);
        let nodes_health_check_firewall = internal_health_check_firewall_name(&nodes_hc);
        let local_health_check_firewall = internal_health_check_firewall_name(&lb);
        let names = IlbNames {
            ipv6: Ipv6Names {
                rule: v6(&lb),
                firewall: v6(&firewall),
                shared_health_check_firewall: v6(&nodes_health_check_firewall),
                local_health_check_firewall: v6(&local_health_check_firewall),
            },
            firewall,
            legacy_firewall: lb.clone(),
            instance_group: instance_group_name(cluster_id),
            nodes_health_check_firewall,
            nodes_health_check: nodes_hc,
            local_health_check: lb.clone(),
            local_health_check_firewall,
            lb,
        };
        validate_gce_name(&names.lb, object, "metadata.uid")?;
        validate_gce_name(&names.firewall, object, "metadata.uid")?;
        validate_gce_name(&names.local_health_check_firewall, object, "metadata.uid")?;
        validate_gce_name(&names.instance_group, object, "config.cluster_id")?;
        validate_gce_name(&names.nodes_health_check_firewall, object, "config.cluster_id")?;
        Ok(names)
    }
}

pub(crate) mod l4;

#[cfg(test)]
mod tests;
