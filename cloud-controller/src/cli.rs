//! Command line: `svcnet-cloud-controller --kubeconfig F --project P --region R --zones Z1,Z2
//! --network N --cluster-name C [--node-tags T] [--gce-endpoint URL] [--concurrency N]
//! [--config FILE]`, plus tuning flags. Flags override `--config` (gce.conf), which overrides the
//! metadata server (on a GCE VM).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use svcnet_core::kube_client::KubeArgs;
use svcnet_core::logging::LogArgs;

use crate::config::EtpTransition;
use crate::gce::client::CredentialsMode;
use crate::leader::LeaderArgs;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "svcnet-cloud-controller",
    version,
    about = "GCE load balancers, routes and node initialisation for Kubernetes"
)]
pub struct Cli {
    #[command(flatten)]
    pub kube: KubeArgs,
    #[command(flatten)]
    pub log: LogArgs,
    #[command(flatten)]
    pub leader: LeaderArgs,
    /// GCE project ID (else gce.conf, else the metadata server).
    #[arg(long)]
    pub project: Option<String>,
    /// GCE region of the load balancers (else derived from the first zone).
    #[arg(long)]
    pub region: Option<String>,
    /// Zones of the cluster's nodes, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub zones: Vec<String>,
    /// VPC network name.
    #[arg(long)]
    pub network: Option<String>,
    /// Subnetwork of internal load balancers without the subnet annotation (default: named like
    /// the network, as an auto-mode network's subnet is).
    #[arg(long)]
    pub subnetwork: Option<String>,
    /// Cluster name: prefix of route names.
    #[arg(long)]
    pub cluster_name: Option<String>,
    /// Network tags of the nodes, put into the firewalls' targetTags (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub node_tags: Vec<String>,
    /// Compute API endpoint, e.g. http://127.0.0.1:PORT for svcnet-fake-gce.
    #[arg(long)]
    pub gce_endpoint: Option<String>,
    #[arg(long, value_enum, default_value_t = CredentialsMode::Auto)]
    pub gce_credentials: CredentialsMode,
    /// Services reconciled concurrently (also the route create/delete fan-out). The GCE token
    /// buckets, not this, bound the call rate; see README "Concurrency and rate limits".
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// gce.conf (INI, `[global]` project-id, network-name, subnetwork-name, node-tags, local-zone,
    /// api-endpoint).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Controllers to run (comma separated): service, route, node.
    #[arg(long, value_delimiter = ',', default_value = "service,route,node")]
    pub controllers: Vec<String>,
    /// Pod address ranges; only routes inside them are deleted (empty: every route we named).
    #[arg(long = "cluster-cidr", value_delimiter = ',')]
    pub cluster_cidrs: Vec<ipnet::IpNet>,
    /// Client-side GCE rate limit per quota group (reads = get/list, writes = mutations,
    /// operations = operation polls; calls/s each, 0 = off) and burst. GCE counts each group
    /// separately.
    #[arg(long, default_value_t = 20.0)]
    pub gce_qps: f64,
    #[arg(long, default_value_t = 40)]
    pub gce_burst: u32,
    /// Retries of a failed GCE call (429, 5xx, rate limit, quota) before the sync fails.
    #[arg(long, default_value_t = 8)]
    pub gce_retries: usize,
    /// First pause between operation polls, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub gce_poll_ms: u64,
    #[arg(long, default_value_t = 600)]
    pub lb_resync_seconds: u64,
    #[arg(long, default_value_t = 60)]
    pub route_resync_seconds: u64,
    #[arg(long, default_value_t = 30)]
    pub node_monitor_seconds: u64,
    /// How an externalTrafficPolicy change reaches the pool.
    #[arg(long, value_enum, default_value_t = EtpArg::Recreate)]
    pub etp_transition: EtpArg,
    /// Serve backend-service NetLBs (class `networking.gke.io/l4-regional-external` or
    /// `cloud.google.com/l4-rbs: enabled`) as ingress-gce does; off: they are left to it.
    #[arg(long)]
    pub rbs_netlb: bool,
    /// /healthz and /metrics.
    #[arg(long, default_value = "127.0.0.1:10258")]
    pub metrics_addr: SocketAddr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EtpArg {
    Recreate,
    SwapInPlace,
}

impl From<EtpArg> for EtpTransition {
    fn from(a: EtpArg) -> Self {
        match a {
            EtpArg::Recreate => EtpTransition::Recreate,
            EtpArg::SwapInPlace => EtpTransition::SwapInPlace,
        }
    }
}

/// Identity of the cluster in GCE after merging flags, gce.conf and the metadata server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub project: String,
    pub region: String,
    pub zones: Vec<String>,
    pub network: String,
    pub subnetwork: String,
    pub cluster_name: String,
    pub node_tags: Vec<String>,
    pub endpoint: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("reading --config {path}: {source}")]
    ReadConfig { path: String, source: std::io::Error },
    #[error(transparent)]
    Config(#[from] crate::gceconf::ConfError),
    #[error("{0} is required (flag, --config, or the metadata server on a GCE VM)")]
    Missing(&'static str),
    #[error("--controllers: unknown controller {0:?} (service, route, node)")]
    UnknownController(String),
}

impl Cli {
    pub fn wants(&self, controller: &str) -> bool {
        self.controllers.iter().any(|c| c == controller)
    }

    pub fn duration(secs: u64) -> Duration {
        Duration::from_secs(secs.max(1))
    }

    /// Merges flags over gce.conf over `metadata` (project, zone).
    pub fn resolve(&self, metadata: (Option<String>, Option<String>)) -> Result<Resolved, CliError> {
        for c in &self.controllers {
            if !matches!(c.as_str(), "service" | "route" | "node") {
                return Err(CliError::UnknownController(c.clone()));
            }
        }
        let conf = match &self.config {
            Some(path) => {
                let p = path.display().to_string();
                let text = std::fs::read_to_string(path).map_err(|source| CliError::ReadConfig {
                    path: p.clone(),
                    source,
                })?;
                crate::gceconf::parse(&p, &text)?
            }
            None => Default::default(),
        };
        let (md_project, md_zone) = metadata;
        let project = self
            .project
            .clone()
            .or(conf.project)
            .or(md_project)
            .ok_or(CliError::Missing("--project"))?;
        let mut zones = self.zones.clone();
        if zones.is_empty() {
            zones.extend(conf.local_zone.clone().or(md_zone));
        }
        let region = self
            .region
            .clone()
            .or(conf.region)
            .or_else(|| zones.first().map(|z| crate::nodes::region_of_zone(z).to_owned()))
            .ok_or(CliError::Missing("--region"))?;
        let network = self
            .network
            .clone()
            .or(conf.network)
            .unwrap_or_else(|| "default".to_owned());
        let subnetwork = self
            .subnetwork
            .clone()
            .or(conf.subnetwork)
            .unwrap_or_else(|| network.clone());
        let cluster_name = self
            .cluster_name
            .clone()
            .or(conf.cluster_name)
            .unwrap_or_else(|| "kubernetes".to_owned());
        let node_tags = if self.node_tags.is_empty() {
            conf.node_tags
        } else {
            self.node_tags.clone()
        };
        Ok(Resolved {
            project,
            region,
            zones,
            network,
            subnetwork,
            cluster_name,
            node_tags,
            endpoint: self.gce_endpoint.clone().or(conf.api_endpoint),
        })
    }
}

#[cfg(test)]
mod tests;
