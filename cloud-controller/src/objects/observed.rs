//! What GCE holds for one load balancer, fetched by the I/O layer by the names in
//! [`crate::naming::LbNames`] (404 = None) before planning.

use std::collections::{BTreeMap, BTreeSet};

use crate::objects::{
    Address, BackendService, Firewall, ForwardingRule, HealthCheck, HttpHealthCheck, TargetPool,
};

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Observed {
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
    /// the re-plan after a [`crate::gce::outcome::Outcome::KeptInUse`] delete. While true, planners
    /// neither retry that delete nor remove the check's firewall.
    pub nodes_health_check_used_elsewhere: bool,
}

/// What GCE holds for one internal LB (404 = None / absent from the maps).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct IlbObserved {
    pub address: Option<Address>,
    /// The regional address holding spec.loadBalancerIP, whatever its name.
    pub ip_holder: Option<Address>,
    pub forwarding_rule: Option<ForwardingRule>,
    pub backend_service: Option<BackendService>,
    pub nodes_health_check: Option<HealthCheck>,
    pub local_health_check: Option<HealthCheck>,
    pub firewall: Option<Firewall>,
    pub legacy_firewall: Option<Firewall>,
    pub nodes_health_check_firewall: Option<Firewall>,
    pub local_health_check_firewall: Option<Firewall>,
    /// The IPv6 half ([`crate::naming::Ipv6Names`]): rule, its reservation, nodes firewall and
    /// the checks' IPv6 firewalls.
    pub ipv6_forwarding_rule: Option<ForwardingRule>,
    pub ipv6_address: Option<Address>,
    pub ipv6_firewall: Option<Firewall>,
    pub ipv6_nodes_health_check_firewall: Option<Firewall>,
    pub ipv6_local_health_check_firewall: Option<Firewall>,
    /// zone -> member instance URLs of the shared instance group there (zones without one absent).
    pub instance_groups: BTreeMap<String, Vec<String>>,
    /// Action target keys ([`Action::target_key`](crate::objects::action::Action::target_key)) GCE refused to delete earlier in this sync
    /// because another load balancer uses them (resourceInUseByAnotherResource): kept, and for a
    /// health check its firewall too.
    pub kept_in_use: BTreeSet<String>,
}

/// What GCE holds for one backend-service (RBS) network LB (404 = None / absent from the maps).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RbsObserved {
    /// Our reservation, named like the forwarding rule.
    pub address: Option<Address>,
    /// The regional address holding spec.loadBalancerIP, whatever its name.
    pub ip_holder: Option<Address>,
    pub forwarding_rule: Option<ForwardingRule>,
    pub backend_service: Option<BackendService>,
    /// The regional checks: the cluster's shared one and the Service's own.
    pub shared_health_check: Option<HealthCheck>,
    pub local_health_check: Option<HealthCheck>,
    pub nodes_firewall: Option<Firewall>,
    pub shared_health_check_firewall: Option<Firewall>,
    pub local_health_check_firewall: Option<Firewall>,
    /// The IPv6 rule and nodes firewall of a dual-stack NetLB (ingress-gce's `-ipv6` names).
    pub ipv6_forwarding_rule: Option<ForwardingRule>,
    pub ipv6_nodes_firewall: Option<Firewall>,
    /// Our IPv6 reservation, named like the IPv6 rule, while the rule is being made.
    pub ipv6_address: Option<Address>,
    /// The health-check firewalls of the IPv6 probers: the shared check's and the Service's own.
    pub ipv6_shared_health_check_firewall: Option<Firewall>,
    pub ipv6_local_health_check_firewall: Option<Firewall>,
    /// zone -> member instance URLs of the shared instance group there.
    pub instance_groups: BTreeMap<String, Vec<String>>,
    /// Target keys GCE refused to delete earlier in this sync (in use by another LB): kept.
    pub kept_in_use: BTreeSet<String>,
}
