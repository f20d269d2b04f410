//! The entry point the service controller calls per sync: Service + Nodes + what GCE holds ->
//! the calls to make. Pure; validation errors come back before any call is planned.

use k8s_openapi::api::core::v1::{Node, Service};

use crate::config::Config;
use crate::error::Result;
use crate::lb::external::address::{IpChoice, resolve_ip};
use crate::lb::external::desired::{DesiredLb, desired_lb};
use crate::lb::external::plan::plan_ensure;
use crate::lb::hosts::lb_hosts;
use crate::lb::ownership::forwarding_rule_is_foreign;
use crate::lb::spec::LbSpec;
use crate::naming::LbNames;
use crate::objects::Address;
use crate::objects::action::Action;
use crate::objects::observed::Observed;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnsurePlan {
    pub actions: Vec<Action>,
    /// The plan stops after reserving a new address (GCE picks the IP, which the firewall and the
    /// forwarding rule need): execute, GET the address, and plan again.
    pub replan: bool,
    /// IP for `status.loadBalancer.ingress[0].ip` once the actions are done (None while reserving).
    pub ingress_ip: Option<String>,
    /// Eligible nodes without a GCE providerID yet (not initialised): not in the pool this round.
    pub skipped_nodes: Vec<String>,
    pub desired: Option<DesiredLb>,
    /// The forwarding rule named like our LB points at a backend service: another controller's
    /// load balancer (see [`crate::lb::ownership`]). No actions; the caller writes nothing.
    pub implemented_elsewhere: bool,
}

impl EnsurePlan {
    /// Only pool membership changes (node churn): upstream reports these as UpdatedLoadBalancer
    /// (UpdateLoadBalancer path) rather than EnsuringLoadBalancer/EnsuredLoadBalancer.
    pub(crate) fn only_membership_changes(&self) -> bool {
        !self.actions.is_empty()
            && self
                .actions
                .iter()
                .all(|a| matches!(a, Action::AddInstances { .. } | Action::RemoveInstances { .. }))
    }
}

/// Names to GET before planning (the I/O layer fills [`Observed`] from them).
pub(crate) fn lb_names(service: &Service, cfg: &Config) -> Result<LbNames> {
    let spec = LbSpec::from_service(service)?;
    LbNames::new(&spec.uid, &cfg.cluster_id, &spec.object)
}

pub(crate) fn ensure(
    service: &Service,
    nodes: &[Node],
    cfg: &Config,
    observed: &Observed,
) -> Result<EnsurePlan> {
    let mut spec = LbSpec::from_service(service)?;
    crate::lb::families::require_ipv4(service, &spec.object, "a target-pool")?;
    let names = LbNames::new(&spec.uid, &cfg.cluster_id, &spec.object)?;
    if forwarding_rule_is_foreign(observed.forwarding_rule.as_ref()) {
        return Ok(EnsurePlan {
            actions: Vec::new(),
            replan: false,
            ingress_ip: None,
            skipped_nodes: Vec::new(),
            desired: None,
            implemented_elsewhere: true,
        });
    }
    if !spec.network_tier_annotated {
        keep_existing_tier(&mut spec, &names, observed);
    }
    let (hosts, skipped_nodes) = lb_hosts(nodes);
    if hosts.is_empty() {
        return Err(crate::error::Error::NoEligibleNodes { object: spec.object });
    }

    let (observed, mut actions) = delete_wrong_tier(&spec, &names, observed);

    match resolve_ip(&spec, &names.lb, &observed)? {
        IpChoice::Reserve => {
            actions.push(Action::CreateAddress(Address {
                name: names.lb.clone(),
                description: crate::naming::service_description(&spec.service_name),
                address: None,
                network_tier: spec.network_tier.clone(),
                ..Address::default()
            }));
            Ok(EnsurePlan {
                actions,
                replan: true,
                ingress_ip: None,
                skipped_nodes,
                desired: None,
                implemented_elsewhere: false,
            })
        }
        IpChoice::Known { ip, controller_owned } => {
            let desired = desired_lb(&spec, &names, &hosts, cfg, &ip, controller_owned)?;
            actions.extend(plan_ensure(&desired, &observed, cfg));
            Ok(EnsurePlan {
                actions,
                replan: false,
                ingress_ip: Some(ip),
                skipped_nodes,
                desired: Some(desired),
                implemented_elsewhere: false,
            })
        }
    }
}

/// Without the tier annotation upstream leaves an existing LB in whatever tier it has. svcnet
/// goes one step further and *keeps* that tier for objects it (re)creates, so a forwarding rule
/// recreated for a port change cannot end up in another tier than its address. Moving to a
/// user's address keeps upstream's rule (default PREMIUM, checked in resolve_ip).
fn keep_existing_tier(spec: &mut LbSpec, names: &LbNames, observed: &Observed) {
    let to_user_ip =
        spec.requested_ip.is_some() && observed.ip_holder.as_ref().is_some_and(|a| a.name != names.lb);
    let existing = observed.forwarding_rule.as_ref().map(|f| f.network_tier.as_str());
    let existing = existing.or(observed.address.as_ref().map(|a| a.network_tier.as_str()));
    if let Some(tier) = existing.filter(|t| !t.is_empty() && !to_user_ip) {
        spec.network_tier = tier.to_owned();
    }
}

/// Upstream deleteWrongNetworkTieredResources: only when the tier annotation is present, so a
/// missing annotation never tears down a working LB of the other tier. Returns the observation
/// without what is being deleted, and the deletes.
fn delete_wrong_tier(spec: &LbSpec, names: &LbNames, observed: &Observed) -> (Observed, Vec<Action>) {
    let mut observed = observed.clone();
    let mut actions = Vec::new();
    if spec.network_tier_annotated {
        if observed
            .forwarding_rule
            .as_ref()
            .is_some_and(|f| wrong_tier(&f.network_tier, &spec.network_tier))
        {
            actions.push(Action::DeleteForwardingRule {
                name: names.lb.clone(),
            });
            observed.forwarding_rule = None;
        }
        if observed
            .address
            .as_ref()
            .is_some_and(|a| wrong_tier(&a.network_tier, &spec.network_tier))
        {
            actions.push(Action::DeleteAddress {
                name: names.lb.clone(),
            });
            observed.address = None;
            observed.ip_holder = observed.ip_holder.filter(|a| a.name != names.lb);
        }
    }
    (observed, actions)
}

fn wrong_tier(have: &str, want: &str) -> bool {
    !have.is_empty() && have != want
}
