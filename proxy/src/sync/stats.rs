//! What a sync rendered and how large the family is: plain data both modes' renderers and syncs use,
//! kept in a leaf so a renderer can name it without depending on the sync loop.

use crate::model::ProxyState;

/// Above this many endpoints in a family upstream runs in "large cluster mode" (both proxiers'
/// largeClusterEndpointsThreshold): no per-endpoint comments, no hourly full resync.
pub(crate) const LARGE_CLUSTER_ENDPOINTS: usize = 1000;

/// Upstream's large-cluster mode: more than 1000 endpoints in the family. Its hourly "just in case"
/// full resync rewrites every chain, which disrupts traffic at that size (kubernetes#138571).
pub(crate) fn is_large(state: &ProxyState) -> bool {
    state.endpoints.values().map(|e| e.len()).sum::<usize>() > LARGE_CLUSTER_ENDPOINTS
}

/// What a sync rendered, for its log line and the no-local-endpoints gauges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RenderStats {
    pub services: usize,
    pub endpoints: usize,
    pub no_local_internal: usize,
    pub no_local_external: usize,
}
