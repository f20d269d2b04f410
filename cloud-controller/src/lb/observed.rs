//! What GCE holds for one load balancer, fetched by the I/O layer by the names in
//! [`crate::naming::LbNames`] (404 = None) before planning.

use crate::gce::{Address, Firewall, ForwardingRule, HttpHealthCheck, TargetPool};

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
    /// GCE refused to delete the shared node health check earlier in this sync with 400
    /// resourceInUseByAnotherResource: another load balancer's pool references it. Not read from
    /// GCE (no target pool is listed, upstream learns it the same way); the I/O layer sets it for
    /// the re-plan after a [`crate::gce::exec::Outcome::KeptInUse`] delete. While true, planners
    /// neither retry that delete nor remove the check's firewall.
    pub nodes_health_check_used_elsewhere: bool,
}
