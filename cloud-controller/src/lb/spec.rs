//! The Service, read and validated once: everything the load balancer depends on, as plain data.
//! Any invalid input becomes an [`Error`] naming the field, before a single GCE call is planned.

use std::collections::{BTreeMap, BTreeSet};

use ipnet::IpNet;
use k8s_openapi::api::core::v1::{Service, ServicePort};

use crate::error::{Error, Result};
use crate::naming::{NODES_HEALTH_CHECK_PATH, NODES_HEALTH_CHECK_PORT};
use crate::objects::{AFFINITY_CLIENT_IP, AFFINITY_NONE, TIER_PREMIUM, TIER_STANDARD};

pub(crate) const NETWORK_TIER_ANNOTATION: &str = "cloud.google.com/network-tier";
pub(crate) const SOURCE_RANGES_ANNOTATION: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";
/// ingress-gce's weighted load balancing opt-in (annotations.WeightedL4AnnotationKey) and its one
/// value.
/// ingress-gce's subnet of an RBS NetLB's IPv6 rule (l4/annotations: the cluster's subnet without it).
pub(crate) const LB_SUBNET_ANNOTATION: &str = "networking.gke.io/load-balancer-subnet";
pub(crate) const WEIGHTED_LB_ANNOTATION: &str = "networking.gke.io/weighted-load-balancing";
pub(crate) const WEIGHTED_LB_PODS_PER_NODE: &str = "pods-per-node";

/// Upstream gce.go health check parameters (8 s interval, 1 s timeout, 1 healthy, 3 unhealthy).
pub(crate) const HC_CHECK_INTERVAL_SEC: i32 = 8;
pub(crate) const HC_TIMEOUT_SEC: i32 = 1;
pub(crate) const HC_HEALTHY_THRESHOLD: i32 = 1;
pub(crate) const HC_UNHEALTHY_THRESHOLD: i32 = 3;
/// Upstream's default when neither the field nor the annotation restricts sources.
const DEFAULT_SOURCE_RANGE: &str = "0.0.0.0/0";
/// The forwarding rule protocol of a mixed-protocol Service: every protocol to the backend
/// service (ingress-gce's L3 rule).
pub(crate) const PROTOCOL_L3_DEFAULT: &str = "L3_DEFAULT";
/// The backend service protocol behind an `L3_DEFAULT` rule.
pub(crate) const PROTOCOL_UNSPECIFIED: &str = "UNSPECIFIED";

/// Where the target pool's health check probes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HealthCheckKind {
    /// ETP=Cluster: the shared `k8s-<clusterid>-node` check on kube-proxy's 10256 /healthz.
    Nodes,
    /// ETP=Local: a per-service check on spec.healthCheckNodePort.
    Local { node_port: i32 },
}

impl HealthCheckKind {
    pub(crate) fn port(&self) -> i32 {
        match self {
            HealthCheckKind::Nodes => NODES_HEALTH_CHECK_PORT,
            HealthCheckKind::Local { node_port } => *node_port,
        }
    }

    /// Both kinds probe `/healthz` (upstream's GetServiceHealthCheckPathPort and GetNodesHealthCheckPath).
    pub(crate) fn path(&self) -> &'static str {
        NODES_HEALTH_CHECK_PATH
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LbSpec {
    /// `Service ns/name`, for errors.
    pub object: String,
    /// `ns/name`, for descriptions.
    pub service_name: String,
    pub uid: String,
    /// `TCP` or `UDP`; [`PROTOCOL_L3_DEFAULT`] for a Service mixing both (accepted only by
    /// [`LbSpec::from_service_mixed`]).
    pub protocol: String,
    /// Service ports of all protocols, sorted, deduplicated.
    pub ports: Vec<i32>,
    /// Protocol (`TCP`, `UDP`) -> its ports, sorted, deduplicated: two entries when mixed.
    pub protocol_ports: BTreeMap<String, Vec<i32>>,
    /// NONE | CLIENT_IP.
    pub session_affinity: String,
    /// Normalised CIDRs (host bits cleared), sorted, deduplicated.
    pub source_ranges: Vec<String>,
    /// PREMIUM | STANDARD.
    pub network_tier: String,
    /// Whether the tier annotation is present: upstream deletes wrong-tier objects only then.
    pub network_tier_annotated: bool,
    /// spec.loadBalancerIP, when set.
    pub requested_ip: Option<String>,
    /// Whether `spec.ipFamilies` asks for IPv6 (`lb::families`): an RBS NetLB keeps its IPv6
    /// objects only then.
    pub ipv6: bool,
    /// Whether it asks for IPv4 (no `spec.ipFamilies` counts as IPv4).
    pub ipv4: bool,
    /// The `networking.gke.io/load-balancer-subnet` annotation (a GCE name), when set.
    pub subnet: Option<String>,
    pub health_check: HealthCheckKind,
    /// The weighted-LB annotation says `pods-per-node` and the policy is ETP Local (ingress-gce
    /// isWeightedLBPodsPerNode): backends weigh by the endpoint count their check reports.
    pub weighted_pods_per_node: bool,
}

pub(crate) fn service_object(service: &Service) -> String {
    format!(
        "Service {}/{}",
        service.metadata.namespace.as_deref().unwrap_or(""),
        service.metadata.name.as_deref().unwrap_or("")
    )
}

/// Each port's protocol (TCP or UDP) with its distinct port numbers, sorted. More than one
/// protocol is an error unless `mixed_ok`.
fn protocol_ports(object: &str, ports: &[ServicePort], mixed_ok: bool) -> Result<BTreeMap<String, Vec<i32>>> {
    let mut by_protocol: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    let mut first: Option<String> = None;
    for (i, port) in ports.iter().enumerate() {
        let protocol = port.protocol.clone().unwrap_or_else(|| "TCP".into());
        match &first {
            None => first = Some(protocol.clone()),
            Some(f) if *f != protocol && !mixed_ok => {
                return Err(Error::MixedProtocols {
                    object: object.to_owned(),
                    first: f.clone(),
                    other: protocol,
                });
            }
            Some(_) => {}
        }
        if protocol != "TCP" && protocol != "UDP" {
            return Err(Error::UnsupportedProtocol {
                object: object.to_owned(),
                field: format!("spec.ports[{i}].protocol"),
                value: protocol,
            });
        }
        by_protocol.entry(protocol).or_default().insert(port.port);
    }
    Ok(by_protocol
        .into_iter()
        .map(|(p, set)| (p, set.into_iter().collect()))
        .collect())
}

/// `cloud.google.com/network-tier`: the tier, and whether the annotation set it.
fn network_tier(object: &str, annotation: Option<&String>) -> Result<(String, bool)> {
    Ok(match annotation {
        None => (TIER_PREMIUM.to_owned(), false),
        // Upstream compares case-sensitively against cloud.NetworkTierStandard/Premium.
        Some(v) if v == "Standard" => (TIER_STANDARD.to_owned(), true),
        Some(v) if v == "Premium" => (TIER_PREMIUM.to_owned(), true),
        Some(v) => {
            return Err(Error::InvalidNetworkTier {
                object: object.to_owned(),
                field: NETWORK_TIER_ANNOTATION.into(),
                value: v.clone(),
            });
        }
    })
}

/// spec.loadBalancerIP, when set, as an IP address.
fn requested_ip(object: &str, ip: Option<String>) -> Result<Option<String>> {
    let requested_ip = ip.filter(|ip| !ip.is_empty());
    if let Some(ip) = &requested_ip
        && ip.parse::<std::net::IpAddr>().is_err()
    {
        return Err(Error::RequestedIp {
            object: object.to_owned(),
            field: "spec.loadBalancerIP".into(),
            message: format!("{ip:?} is not an IP address"),
        });
    }
    Ok(requested_ip)
}

impl LbSpec {
    /// One protocol only: target-pool LBs cannot mix protocols.
    pub(crate) fn from_service(service: &Service) -> Result<Self> {
        Self::parse(service, false)
    }

    /// TCP and UDP ports may mix (backend-service LBs: one `L3_DEFAULT` rule carries both).
    pub(crate) fn from_service_mixed(service: &Service) -> Result<Self> {
        Self::parse(service, true)
    }

    fn parse(service: &Service, mixed_ok: bool) -> Result<Self> {
        let object = service_object(service);
        let service_name = format!(
            "{}/{}",
            service.metadata.namespace.as_deref().unwrap_or(""),
            service.metadata.name.as_deref().unwrap_or("")
        );
        let uid = required_uid(service, &object)?;
        let spec = service.spec.clone().unwrap_or_default();
        let ports = spec.ports.unwrap_or_default();
        if ports.is_empty() {
            return Err(Error::NoPorts { object });
        }
        let protocol_ports = protocol_ports(&object, &ports, mixed_ok)?;
        let protocol = match protocol_ports.keys().collect::<Vec<_>>().as_slice() {
            [one] => (*one).clone(),
            _ => PROTOCOL_L3_DEFAULT.to_owned(),
        };
        let ports: Vec<i32> = ports
            .iter()
            .map(|p| p.port)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();

        // Upstream translateAffinityType: anything but ClientIP is NONE.
        let session_affinity = match spec.session_affinity.as_deref() {
            Some("ClientIP") => AFFINITY_CLIENT_IP,
            _ => AFFINITY_NONE,
        }
        .to_owned();

        let annotations = service.metadata.annotations.clone().unwrap_or_default();
        let source_ranges = source_ranges(
            &object,
            spec.load_balancer_source_ranges.as_deref(),
            annotations.get(SOURCE_RANGES_ANNOTATION),
        )?;

        let (network_tier, network_tier_annotated) =
            network_tier(&object, annotations.get(NETWORK_TIER_ANNOTATION))?;
        let requested_ip = requested_ip(&object, spec.load_balancer_ip)?;

        // Upstream GetServiceHealthCheckPathPort: Local policy on a LoadBalancer with a node port.
        let local = spec.external_traffic_policy.as_deref() == Some("Local");
        let health_check = match spec.health_check_node_port {
            Some(node_port) if local && node_port != 0 => HealthCheckKind::Local { node_port },
            _ => HealthCheckKind::Nodes,
        };

        let families = crate::lb::families::families(service);
        let subnet = lb_subnet(&object, annotations.get(LB_SUBNET_ANNOTATION))?;
        let weighted_pods_per_node = local
            && annotations
                .get(WEIGHTED_LB_ANNOTATION)
                .is_some_and(|v| v == WEIGHTED_LB_PODS_PER_NODE);

        Ok(LbSpec {
            object,
            service_name,
            uid,
            protocol,
            ports,
            protocol_ports,
            session_affinity,
            source_ranges,
            network_tier,
            network_tier_annotated,
            requested_ip,
            ipv6: families.v6,
            ipv4: families.v4,
            subnet,
            health_check,
            weighted_pods_per_node,
        })
    }

    pub(crate) fn port_range(&self) -> String {
        let min = self.ports.first().copied().unwrap_or_default();
        let max = self.ports.last().copied().unwrap_or_default();
        format!("{min}-{max}")
    }

    /// Whether TCP and UDP ports mix (the spec came from [`LbSpec::from_service_mixed`]).
    pub(crate) fn mixed(&self) -> bool {
        self.protocol_ports.len() > 1
    }

    /// Firewall ports as upstream writes them now: consecutive ports merged into `a-b` ranges.
    pub(crate) fn firewall_port_ranges(&self) -> Vec<String> {
        port_ranges(&self.ports)
    }

    /// Per protocol (lower case, as ingress-gce writes a mixed Service's firewall): its port
    /// ranges.
    pub(crate) fn firewall_allowed(&self) -> Vec<crate::objects::FirewallAllowed> {
        self.protocol_ports
            .iter()
            .map(|(protocol, ports)| crate::objects::FirewallAllowed {
                ip_protocol: protocol.to_lowercase(),
                ports: port_ranges(ports),
            })
            .collect()
    }

    /// Firewall ports as older upstream versions wrote them: one entry per port.
    pub(crate) fn firewall_port_list(&self) -> Vec<String> {
        self.ports.iter().map(|p| p.to_string()).collect()
    }
}

/// Sorted ports with consecutive ones merged into `a-b` ranges.
fn port_ranges(ports: &[i32]) -> Vec<String> {
    let mut out = Vec::new();
    let mut iter = ports.iter().copied();
    let Some(mut start) = iter.next() else { return out };
    let mut prev = start;
    for p in iter {
        if p != prev + 1 {
            out.push(range_str(start, prev));
            start = p;
        }
        prev = p;
    }
    out.push(range_str(start, prev));
    out
}

/// metadata.uid, which every GCE name of the LB derives from.
fn required_uid(service: &Service, object: &str) -> Result<String> {
    match service.metadata.uid.as_deref() {
        Some(uid) if !uid.is_empty() => Ok(uid.to_owned()),
        _ => Err(Error::MissingField {
            object: object.to_owned(),
            field: "metadata.uid".into(),
        }),
    }
}

/// The subnet annotation's value, which goes into a GCE URL: a GCE name or an error.
fn lb_subnet(object: &str, value: Option<&String>) -> Result<Option<String>> {
    let Some(sub) = value else { return Ok(None) };
    let field = format!("metadata.annotations[{LB_SUBNET_ANNOTATION}]");
    crate::naming::validate_gce_name(sub, object, &field)?;
    Ok(Some(sub.clone()))
}

fn range_str(a: i32, b: i32) -> String {
    if a == b { a.to_string() } else { format!("{a}-{b}") }
}

/// spec.loadBalancerSourceRanges wins; else the annotation (comma separated); else 0.0.0.0/0.
/// Entries are trimmed and host bits cleared (Go's ParseCIDR semantics), the set is sorted.
fn source_ranges(object: &str, field: Option<&[String]>, annotation: Option<&String>) -> Result<Vec<String>> {
    let (field_name, entries): (String, Vec<String>) = match field {
        Some(list) if !list.is_empty() => ("spec.loadBalancerSourceRanges".into(), list.to_vec()),
        _ => {
            let raw = annotation.map(|s| s.trim()).unwrap_or("");
            let raw = if raw.is_empty() { DEFAULT_SOURCE_RANGE } else { raw };
            (
                format!("metadata.annotations[{SOURCE_RANGES_ANNOTATION}]"),
                raw.split(',').map(str::to_owned).collect(),
            )
        }
    };
    let mut set = BTreeSet::new();
    for entry in entries {
        let net: IpNet = entry.trim().parse().map_err(|_| Error::InvalidSourceRange {
            object: object.to_owned(),
            field: field_name.clone(),
            value: entry.clone(),
        })?;
        set.insert(net.trunc());
    }
    Ok(set.into_iter().map(|n| n.to_string()).collect())
}

/// Normalise CIDR strings the way [`LbSpec::source_ranges`] are, for comparing with GCE's copy.
/// Unparsable entries are kept verbatim so they compare unequal (and get repaired).
pub(crate) fn normalize_cidrs(list: &[String]) -> BTreeSet<String> {
    list.iter()
        .map(|s| {
            s.trim()
                .parse::<IpNet>()
                .map(|n| n.trunc().to_string())
                .unwrap_or_else(|_| s.clone())
        })
        .collect()
}
