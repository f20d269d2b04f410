//! What rendering a service port decides before writing a rule: the context shared by every port of
//! a render ([`Ctx`]) and the port's [`Plan`] (its chain names, which of them exist, and where traffic
//! without endpoints goes).

use super::naming::*;
use super::{LARGE_CLUSTER_ENDPOINTS, comment};
use crate::config::RenderConfig;
use crate::model::{Categorized, Endpoint, NodeFacts, ProxyState, ServicePort, ServicePortName};

/// What every port of one render shares.
pub(super) struct Ctx<'a> {
    pub cfg: &'a RenderConfig,
    pub node: &'a NodeFacts,
    /// Upstream drops per-endpoint comments above 1000 endpoints to shrink the payload.
    pub large_cluster: bool,
    pub local_detector: Option<(String, String)>,
    /// Endpoints of all service ports (for large-cluster mode and stats).
    pub total_endpoints: usize,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(state: &ProxyState, node: &'a NodeFacts, cfg: &'a RenderConfig) -> Ctx<'a> {
        let total_endpoints: usize = state.services.keys().map(|k| endpoints_of(state, k).len()).sum();
        Ctx {
            cfg,
            node,
            large_cluster: total_endpoints > LARGE_CLUSTER_ENDPOINTS,
            local_detector: cfg.local_detector(),
            total_endpoints,
        }
    }
}

/// A port's endpoints (none when it has no slice).
pub(super) fn endpoints_of<'s>(state: &'s ProxyState, name: &ServicePortName) -> &'s [Endpoint] {
    state.endpoints.get(name).map_or(&[], |e| &e[..])
}

/// The decisions upstream takes before writing anything for a service port: which chains exist and
/// whether internal/external traffic has endpoints to go to.
pub(super) struct Plan {
    pub(super) name: String,
    /// `-m <proto> -p <proto>`, as upstream writes it.
    pub(super) m: String,
    pub(super) svc_chain: String,
    pub(super) svl_chain: String,
    pub(super) ext_chain: String,
    pub(super) fw_chain: String,
    pub(super) has_endpoints: bool,
    pub(super) has_internal: bool,
    pub(super) has_external: bool,
    pub(super) uses_cluster_chain: bool,
    pub(super) uses_local_chain: bool,
    pub(super) uses_ext_chain: bool,
    pub(super) uses_fw_chain: bool,
    /// Target and comment of the filter rule for internal / external traffic without endpoints.
    pub(super) internal_filter: (&'static str, String),
    pub(super) external_filter: (&'static str, String),
}

impl Plan {
    pub(super) fn new(svc: &ServicePort, cat: &Categorized) -> Plan {
        let name = svc.name.to_string();
        let proto = svc.name.protocol.as_str();
        let has_endpoints = cat.has_any;
        let has_local = has_endpoints && !cat.local.is_empty();
        let has_internal = if svc.internal_policy_local {
            has_local
        } else {
            has_endpoints
        };
        let has_external = if svc.external_policy_local {
            has_local
        } else {
            has_endpoints
        };
        let no_endpoints = comment(&format!("{name} has no endpoints"));
        let no_local = comment(&format!("{name} has no local endpoints"));
        let filter = |has: bool| {
            if !has_endpoints {
                ("REJECT", no_endpoints.clone())
            } else if has {
                ("", no_local.clone())
            } else {
                ("DROP", no_local.clone())
            }
        };
        Plan {
            m: format!("-m {proto} -p {proto}"),
            svc_chain: svc_chain(&name, proto),
            svl_chain: svl_chain(&name, proto),
            ext_chain: ext_chain(&name, proto),
            fw_chain: fw_chain(&name, proto),
            has_endpoints,
            has_internal,
            has_external,
            uses_cluster_chain: !cat.cluster.is_empty() && svc.uses_cluster_endpoints(),
            uses_local_chain: !cat.local.is_empty() && svc.uses_local_endpoints(),
            uses_ext_chain: has_endpoints && svc.externally_accessible(),
            uses_fw_chain: has_endpoints && !svc.load_balancer_vips.is_empty() && svc.source_ranges.is_some(),
            internal_filter: filter(has_internal),
            external_filter: filter(has_external),
            name,
        }
    }

    pub(super) fn internal_chain(&self, svc: &ServicePort) -> &str {
        if svc.internal_policy_local {
            &self.svl_chain
        } else {
            &self.svc_chain
        }
    }

    pub(super) fn external_policy_chain(&self, svc: &ServicePort) -> &str {
        if svc.external_policy_local {
            &self.svl_chain
        } else {
            &self.svc_chain
        }
    }
}

/// `-m comment --comment <text>`, quoted as upstream quotes it.
pub(super) fn comment_arg(text: &str) -> String {
    format!("-m comment --comment {}", comment(text))
}
