//! One GCE mutation each. The I/O layer executes a `Vec<Action>` in order, one call per action
//! (waiting for the operation), stopping at the first error; 404 on delete and 409 on create count
//! as done, as upstream treats them.

use crate::gce::{Address, Firewall, ForwardingRule, HttpHealthCheck, TargetPool};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
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
}

impl Action {
    /// Short verb for logs and metrics labels (`svcnet_gce_calls_total{action=...}`).
    pub fn label(&self) -> &'static str {
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
        }
    }

    /// `kind/name` of the GCE object the call mutates (kind = the REST collection), as
    /// `gce::observe::Touched` keys it.
    pub fn target_key(&self) -> String {
        let kind = match self {
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
    pub fn target_name(&self) -> &str {
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
        }
    }
}
