//! Controller configuration the pure domain needs (the binary fills it from flags / gce.conf).
//!
//! Never imports: crate::lb, crate::routes, crate::nodes, crate::gce, crate::controllers.

use ipnet::IpNet;

/// Upstream's `maxTargetPoolCreateInstances`: instances put into a new target pool in the insert call.
pub(crate) const MAX_TARGET_POOL_CREATE_INSTANCES: usize = 200;
/// Upstream's `maxInstancesPerTargetPoolUpdate`: instances per addInstance/removeInstance call.
pub(crate) const MAX_INSTANCES_PER_TARGET_POOL_UPDATE: usize = 1000;
/// Source ranges of GCE L3/L4 health checkers (upstream's default `--cloud-provider-gce-lb-src-cidrs`).
pub(crate) const L4_LB_HEALTH_CHECK_SOURCE_RANGES: [&str; 4] = [
    "130.211.0.0/22",
    "35.191.0.0/16",
    "209.85.152.0/22",
    "209.85.204.0/22",
];
/// Base of GCE resource URLs; links are compared from `projects/` on, so a fake endpoint works too.
pub(crate) const DEFAULT_COMPUTE_API_BASE: &str = "https://www.googleapis.com/compute/v1/";

/// How a change of externalTrafficPolicy (node health check <-> service health check) reaches the
/// target pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EtpTransition {
    /// Upstream behaviour: delete the forwarding rule and the pool, recreate both with the new
    /// health check (the LB is down in between; the reserved address keeps the IP).
    #[default]
    Recreate,
    /// svcnet option: `removeHealthCheck` + `addHealthCheck` on the existing pool, no downtime
    /// beyond the moment the pool has no health check (all members then count as healthy).
    SwapInPlace,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub project: String,
    pub region: String,
    /// Network name (not URL), e.g. `default`.
    pub network: String,
    /// Tags put into `targetTags` of every firewall the controller writes.
    pub node_tags: Vec<String>,
    /// Cluster ID (upstream reads it from ConfigMap kube-system/ingress-uid); names shared objects.
    pub cluster_id: String,
    /// Cluster name; prefix of route names (cut to 26 characters).
    pub cluster_name: String,
    pub api_base: String,
    /// Instances per addInstance/removeInstance call.
    pub instance_batch: usize,
    /// Instances in the target pool insert call; the rest follow as addInstance batches.
    pub create_instances_max: usize,
    pub health_check_source_ranges: Vec<String>,
    pub etp_transition: EtpTransition,
    /// Route controller: only routes whose destRange lies in one of these are ours to delete
    /// (upstream's `isResponsibleForRoute`). Empty = every route with our prefix.
    pub cluster_cidrs: Vec<IpNet>,
    /// Subnetwork name of internal load balancers without the subnet annotation (upstream's
    /// gce.conf `subnetwork-name`; an auto-mode network's subnet is named like the network).
    pub subnetwork: String,
    /// Backend-service NetLBs (`--rbs-netlb`): the kube-system namespace's UID, which ingress-gce's
    /// L4 namer hashes into every `k8s2-` name. None = off: RBS Services are another controller's.
    pub rbs_netlb: Option<String>,
}

impl Config {
    /// A config with upstream defaults for everything but the identity of the cluster.
    pub fn new(project: &str, region: &str, network: &str, cluster_id: &str, cluster_name: &str) -> Self {
        Config {
            project: project.to_owned(),
            region: region.to_owned(),
            network: network.to_owned(),
            node_tags: Vec::new(),
            cluster_id: cluster_id.to_owned(),
            cluster_name: cluster_name.to_owned(),
            api_base: DEFAULT_COMPUTE_API_BASE.to_owned(),
            instance_batch: MAX_INSTANCES_PER_TARGET_POOL_UPDATE,
            create_instances_max: MAX_TARGET_POOL_CREATE_INSTANCES,
            health_check_source_ranges: L4_LB_HEALTH_CHECK_SOURCE_RANGES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            etp_transition: EtpTransition::Recreate,
            cluster_cidrs: Vec::new(),
            subnetwork: network.to_owned(),
            rbs_netlb: None,
        }
    }

    fn project_url(&self) -> String {
        format!("{}projects/{}", self.api_base, self.project)
    }

    pub fn network_url(&self) -> String {
        format!("{}/global/networks/{}", self.project_url(), self.network)
    }

    pub fn target_pool_url(&self, name: &str) -> String {
        format!(
            "{}/regions/{}/targetPools/{}",
            self.project_url(),
            self.region,
            name
        )
    }

    pub fn http_health_check_url(&self, name: &str) -> String {
        format!("{}/global/httpHealthChecks/{}", self.project_url(), name)
    }

    pub fn subnetwork_url(&self, name: &str) -> String {
        format!(
            "{}/regions/{}/subnetworks/{}",
            self.project_url(),
            self.region,
            name
        )
    }

    pub fn health_check_url(&self, name: &str) -> String {
        format!("{}/global/healthChecks/{}", self.project_url(), name)
    }

    /// Regional health checks (RBS network load balancers; internal LBs use global ones).
    pub fn region_health_check_url(&self, name: &str) -> String {
        format!(
            "{}/regions/{}/healthChecks/{}",
            self.project_url(),
            self.region,
            name
        )
    }

    pub fn backend_service_url(&self, name: &str) -> String {
        format!(
            "{}/regions/{}/backendServices/{}",
            self.project_url(),
            self.region,
            name
        )
    }

    pub fn instance_group_url(&self, zone: &str, name: &str) -> String {
        format!("{}/zones/{}/instanceGroups/{}", self.project_url(), zone, name)
    }

    pub fn instance_url(&self, zone: &str, instance: &str) -> String {
        format!("{}/zones/{}/instances/{}", self.project_url(), zone, instance)
    }
}
