//! What GCE holds for one load balancer, fetched by the I/O layer by the names in
//! [`crate::naming::LbNames`] (404 = None) before planning.

use crate::gce::{self, Address, Firewall, ForwardingRule, HttpHealthCheck, TargetPool};
use crate::naming::LbNames;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Observed {
    /// The address named like the load balancer (the controller's own reservation).
    pub address: Option<Address>,
    /// The regional address holding the IP the LB is to use, whatever its name (addresses.list
    /// with `address eq IP`): spec.loadBalancerIP when set, else the forwarding rule's IP.
    /// Named differently from the LB = owned by the user, never modified or released.
    pub ip_holder: Option<Address>,
    pub firewall: Option<Firewall>,
    pub nodes_health_check: Option<HttpHealthCheck>,
    pub nodes_health_check_firewall: Option<Firewall>,
    pub local_health_check: Option<HttpHealthCheck>,
    pub local_health_check_firewall: Option<Firewall>,
    pub target_pool: Option<TargetPool>,
    pub forwarding_rule: Option<ForwardingRule>,
    /// Whether a target pool of another load balancer references the shared node health check
    /// (upstream learns it from GCE's resourceInUseByAnotherResource on delete; the I/O layer can
    /// list target pools instead). While true, the shared check and its firewall are never deleted.
    pub nodes_health_check_used_elsewhere: bool,
}

impl Observed {
    /// Whether a plan could delete the shared node health check, and so needs
    /// `nodes_health_check_used_elsewhere` (a listing of every target pool, O(load balancers)):
    /// on delete while the check or its firewall exists; on ensure only for ETP Local while our
    /// pool still references the shared check (the switch away from it).
    pub fn shared_usage_matters(&self, names: &LbNames, local: bool, deleting: bool) -> bool {
        let shared_exists = self.nodes_health_check.is_some() || self.nodes_health_check_firewall.is_some();
        if deleting {
            return shared_exists;
        }
        let pool_uses_shared = self.target_pool.as_ref().is_some_and(|p| {
            p.health_checks
                .iter()
                .any(|l| gce::link_name(l) == names.nodes_health_check)
        });
        local && shared_exists && pool_uses_shared
    }
}
