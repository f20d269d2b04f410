//! `Scenario`: a Service, its nodes and the config, built step by step for planning tests.

use k8s_openapi::api::core::v1::{Node, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{UID, config, node};
use crate::config::Config;
use crate::lb::external::ensure::{EnsurePlan, ensure, lb_names};
use crate::naming::LbNames;
use crate::objects::observed::Observed;

#[derive(Debug, Clone)]
pub(crate) struct Scenario {
    pub cfg: Config,
    pub service: Service,
    pub nodes: Vec<Node>,
}

impl Default for Scenario {
    fn default() -> Self {
        Self::new()
    }
}

impl Scenario {
    /// default/web, LoadBalancer, TCP 80, three ready nodes in us-central1-a.
    pub(crate) fn new() -> Self {
        let service = Service {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                uid: Some(UID.into()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                type_: Some("LoadBalancer".into()),
                ports: Some(vec![ServicePort {
                    port: 80,
                    protocol: Some("TCP".into()),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            status: None,
        };
        let nodes = (1..=3)
            .map(|i| node(&format!("node-{i}"), "us-central1-a"))
            .collect();
        Scenario {
            cfg: config(),
            service,
            nodes,
        }
    }

    fn spec(&mut self) -> &mut ServiceSpec {
        self.service.spec.get_or_insert_with(Default::default)
    }

    pub(crate) fn name(mut self, ns: &str, name: &str) -> Self {
        self.service.metadata.namespace = Some(ns.into());
        self.service.metadata.name = Some(name.into());
        self
    }

    pub(crate) fn ports(mut self, protocol: &str, ports: &[i32]) -> Self {
        self.spec().ports = Some(
            ports
                .iter()
                .map(|p| ServicePort {
                    port: *p,
                    protocol: Some(protocol.into()),
                    ..Default::default()
                })
                .collect(),
        );
        self
    }

    pub(crate) fn raw_ports(mut self, ports: Vec<ServicePort>) -> Self {
        self.spec().ports = Some(ports);
        self
    }

    pub(crate) fn etp_local(mut self, health_check_node_port: i32) -> Self {
        self.spec().external_traffic_policy = Some("Local".into());
        self.spec().health_check_node_port = Some(health_check_node_port);
        self
    }

    pub(crate) fn etp_cluster(mut self) -> Self {
        self.spec().external_traffic_policy = Some("Cluster".into());
        self.spec().health_check_node_port = None;
        self
    }

    pub(crate) fn affinity(mut self, affinity: &str) -> Self {
        self.spec().session_affinity = Some(affinity.into());
        self
    }

    pub(crate) fn source_ranges(mut self, ranges: &[&str]) -> Self {
        self.spec().load_balancer_source_ranges = Some(ranges.iter().map(|s| s.to_string()).collect());
        self
    }

    pub(crate) fn load_balancer_ip(mut self, ip: &str) -> Self {
        self.spec().load_balancer_ip = Some(ip.into());
        self
    }

    pub(crate) fn ip_families(mut self, families: &[&str]) -> Self {
        self.spec().ip_families = Some(families.iter().map(|f| (*f).to_owned()).collect());
        self
    }

    pub(crate) fn annotation(mut self, key: &str, value: &str) -> Self {
        self.service
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(key.into(), value.into());
        self
    }

    pub(crate) fn with_nodes(mut self, nodes: Vec<Node>) -> Self {
        self.nodes = nodes;
        self
    }

    pub(crate) fn add_node(mut self, name: &str, zone: &str) -> Self {
        self.nodes.push(node(name, zone));
        self
    }

    pub(crate) fn remove_node(mut self, name: &str) -> Self {
        self.nodes.retain(|n| n.metadata.name.as_deref() != Some(name));
        self
    }

    pub(crate) fn names(&self) -> LbNames {
        lb_names(&self.service, &self.cfg).expect("valid names")
    }

    pub(crate) fn ensure(&self, observed: &Observed) -> crate::Result<EnsurePlan> {
        ensure(&self.service, &self.nodes, &self.cfg, observed)
    }

    /// The IP GCE would be asked about for `Observed::ip_holder`.
    pub(crate) fn requested_ip(&self) -> Option<String> {
        self.service
            .spec
            .as_ref()
            .and_then(|s| s.load_balancer_ip.clone())
            .filter(|s| !s.is_empty())
    }
}
