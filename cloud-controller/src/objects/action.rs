//! One GCE mutation each. The I/O layer executes a `Vec<Action>` in order, one call per action
//! (waiting for the operation), stopping at the first error; 404 on delete and 409 on create count
//! as done, as upstream treats them.

use crate::objects::{
    Address, BackendService, Firewall, ForwardingRule, HealthCheck, HttpHealthCheck, TargetPool,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// addresses.insert (region). `address: None` = let GCE pick; re-plan afterwards to learn it.
    CreateAddress(Address),
    /// addresses.delete (region). On an address in use this demotes the IP to ephemeral.
    DeleteAddress {
        name: String,
    },
    /// firewalls.insert
    CreateFirewall(Firewall),
    /// firewalls.patch with the whole desired object.
    PatchFirewall(Firewall),
    DeleteFirewall {
        name: String,
    },
    /// httpHealthChecks.insert
    CreateHealthCheck(HttpHealthCheck),
    /// httpHealthChecks.update (full replace).
    UpdateHealthCheck(HttpHealthCheck),
    /// httpHealthChecks.delete. `keep_if_in_use`: the cluster-wide node health check, which other
    /// load balancers' pools may reference; GCE then refuses with 400
    /// resourceInUseByAnotherResource, and that answer means "still in use, keep it" (upstream's
    /// isInUsedByError), not a failure. No pool listing is needed to decide the delete.
    DeleteHealthCheck {
        name: String,
        keep_if_in_use: bool,
    },
    /// targetPools.insert (region), with at most `create_instances_max` instances.
    CreateTargetPool(TargetPool),
    DeleteTargetPool {
        name: String,
    },
    /// targetPools.addInstance: instance URLs.
    AddInstances {
        pool: String,
        instances: Vec<String>,
    },
    /// targetPools.removeInstance: instance URLs.
    RemoveInstances {
        pool: String,
        instances: Vec<String>,
    },
    /// targetPools.addHealthCheck: health check URL.
    AddHealthCheck {
        pool: String,
        health_check: String,
    },
    /// targetPools.removeHealthCheck: health check URL.
    RemoveHealthCheck {
        pool: String,
        health_check: String,
    },
    /// forwardingRules.insert (region)
    CreateForwardingRule(ForwardingRule),
    DeleteForwardingRule {
        name: String,
    },
    /// forwardingRules.setTarget (region): target pool URL.
    SetTarget {
        forwarding_rule: String,
        target: String,
    },
    /// instanceGroups.insert (zone): an unmanaged group with the name alone, as upstream.
    CreateInstanceGroup {
        zone: String,
        name: String,
    },
    /// instanceGroups.delete (zone). The groups are shared by every internal LB: GCE's 400
    /// resourceInUseByAnotherResource means "still used, kept" (upstream isNotFoundOrInUse).
    DeleteInstanceGroup {
        zone: String,
        name: String,
    },
    /// instanceGroups.addInstances (zone): instance URLs.
    AddGroupInstances {
        zone: String,
        group: String,
        instances: Vec<String>,
    },
    /// instanceGroups.removeInstances (zone): instance URLs.
    RemoveGroupInstances {
        zone: String,
        group: String,
        instances: Vec<String>,
    },
    /// healthChecks.insert (global, the non-legacy collection internal LBs use).
    CreateHealthCheckV1(HealthCheck),
    /// healthChecks.update (full replace).
    UpdateHealthCheckV1(HealthCheck),
    /// healthChecks.delete; `keep_if_in_use` as for [`Action::DeleteHealthCheck`].
    DeleteHealthCheckV1 {
        name: String,
        keep_if_in_use: bool,
    },
    /// regionHealthChecks.insert: the regional checks backend-service (RBS) network LBs use.
    CreateRegionHealthCheck(HealthCheck),
    /// regionHealthChecks.update (full replace).
    UpdateRegionHealthCheck(HealthCheck),
    /// regionHealthChecks.delete; `keep_if_in_use` as for [`Action::DeleteHealthCheck`] (the
    /// shared `k8s2-…-l4-shared-hc` other RBS LBs' backend services may reference).
    DeleteRegionHealthCheck {
        name: String,
        keep_if_in_use: bool,
    },
    /// regionBackendServices.insert
    CreateBackendService(BackendService),
    /// regionBackendServices.update (full replace, with the fingerprint last read).
    UpdateBackendService(BackendService),
    /// regionBackendServices.delete (in use = kept, as upstream teardownInternalBackendService).
    DeleteBackendService {
        name: String,
    },
}

impl Action {
    /// Short verb for logs and metrics labels (`svcnet_gce_calls_total{action=...}`).
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Action::CreateAddress(_) => "create_address",
            Action::DeleteAddress { .. } => "delete_address",
            Action::CreateFirewall(_) => "create_firewall",
            Action::PatchFirewall(_) => "patch_firewall",
            Action::DeleteFirewall { .. } => "delete_firewall",
            Action::CreateHealthCheck(_) => "create_health_check",
            Action::UpdateHealthCheck(_) => "update_health_check",
            Action::DeleteHealthCheck { .. } => "delete_health_check",
            Action::CreateTargetPool(_) => "create_target_pool",
            Action::DeleteTargetPool { .. } => "delete_target_pool",
            Action::AddInstances { .. } => "add_instances",
            Action::RemoveInstances { .. } => "remove_instances",
            Action::AddHealthCheck { .. } => "add_health_check",
            Action::RemoveHealthCheck { .. } => "remove_health_check",
            Action::CreateForwardingRule(_) => "create_forwarding_rule",
            Action::DeleteForwardingRule { .. } => "delete_forwarding_rule",
            Action::SetTarget { .. } => "set_target",
            Action::CreateInstanceGroup { .. } => "create_instance_group",
            Action::DeleteInstanceGroup { .. } => "delete_instance_group",
            Action::AddGroupInstances { .. } => "add_group_instances",
            Action::RemoveGroupInstances { .. } => "remove_group_instances",
            Action::CreateHealthCheckV1(_) => "create_hc",
            Action::UpdateHealthCheckV1(_) => "update_hc",
            Action::DeleteHealthCheckV1 { .. } => "delete_hc",
            Action::CreateRegionHealthCheck(_) => "create_region_hc",
            Action::UpdateRegionHealthCheck(_) => "update_region_hc",
            Action::DeleteRegionHealthCheck { .. } => "delete_region_hc",
            Action::CreateBackendService(_) => "create_backend_service",
            Action::UpdateBackendService(_) => "update_backend_service",
            Action::DeleteBackendService { .. } => "delete_backend_service",
        }
    }

    /// `kind/name` of the GCE object the call mutates (kind = the REST collection), as
    /// `gce::observe::Touched` keys it.
    pub(crate) fn target_key(&self) -> String {
        let kind = match self {
            Action::CreateInstanceGroup { zone, .. }
            | Action::DeleteInstanceGroup { zone, .. }
            | Action::AddGroupInstances { zone, .. }
            | Action::RemoveGroupInstances { zone, .. } => {
                return format!("instanceGroups/{zone}/{}", self.target_name());
            }
            Action::CreateHealthCheckV1(_)
            | Action::UpdateHealthCheckV1(_)
            | Action::DeleteHealthCheckV1 { .. } => "healthChecks",
            Action::CreateRegionHealthCheck(_)
            | Action::UpdateRegionHealthCheck(_)
            | Action::DeleteRegionHealthCheck { .. } => "regionHealthChecks",
            Action::CreateBackendService(_)
            | Action::UpdateBackendService(_)
            | Action::DeleteBackendService { .. } => "backendServices",
            Action::CreateAddress(_) | Action::DeleteAddress { .. } => "addresses",
            Action::CreateFirewall(_) | Action::PatchFirewall(_) | Action::DeleteFirewall { .. } => {
                "firewalls"
            }
            Action::CreateHealthCheck(_)
            | Action::UpdateHealthCheck(_)
            | Action::DeleteHealthCheck { .. } => "httpHealthChecks",
            Action::CreateTargetPool(_)
            | Action::DeleteTargetPool { .. }
            | Action::AddInstances { .. }
            | Action::RemoveInstances { .. }
            | Action::AddHealthCheck { .. }
            | Action::RemoveHealthCheck { .. } => "targetPools",
            Action::CreateForwardingRule(_)
            | Action::DeleteForwardingRule { .. }
            | Action::SetTarget { .. } => "forwardingRules",
        };
        format!("{kind}/{}", self.target_name())
    }

    /// Name of the GCE object the call mutates (the pool for instance/health-check membership).
    pub(crate) fn target_name(&self) -> &str {
        match self {
            Action::CreateAddress(a) => &a.name,
            Action::CreateFirewall(f) | Action::PatchFirewall(f) => &f.name,
            Action::CreateHealthCheck(h) | Action::UpdateHealthCheck(h) => &h.name,
            Action::CreateTargetPool(p) => &p.name,
            Action::CreateForwardingRule(f) => &f.name,
            Action::DeleteAddress { name }
            | Action::DeleteFirewall { name }
            | Action::DeleteHealthCheck { name, .. }
            | Action::DeleteTargetPool { name }
            | Action::DeleteForwardingRule { name } => name,
            Action::AddInstances { pool, .. }
            | Action::RemoveInstances { pool, .. }
            | Action::AddHealthCheck { pool, .. }
            | Action::RemoveHealthCheck { pool, .. } => pool,
            Action::SetTarget { forwarding_rule, .. } => forwarding_rule,
            Action::CreateInstanceGroup { name, .. } | Action::DeleteInstanceGroup { name, .. } => name,
            Action::AddGroupInstances { group, .. } | Action::RemoveGroupInstances { group, .. } => group,
            Action::CreateHealthCheckV1(h)
            | Action::UpdateHealthCheckV1(h)
            | Action::CreateRegionHealthCheck(h)
            | Action::UpdateRegionHealthCheck(h) => &h.name,
            Action::DeleteHealthCheckV1 { name, .. }
            | Action::DeleteRegionHealthCheck { name, .. }
            | Action::DeleteBackendService { name } => name,
            Action::CreateBackendService(b) | Action::UpdateBackendService(b) => &b.name,
        }
    }
}
