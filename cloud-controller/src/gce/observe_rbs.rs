//! Reads what GCE holds for a backend-service (RBS) network load balancer (404 = None): the
//! same rows as the internal LB's reader, with regional health checks and the `k8s2-` names.

use crate::gce::client::Gce;
use crate::gce::error::GceError;
use crate::gce::observe::ObservedLb;
use crate::gce::observe_groups::backend_lb_tail;
use crate::gce::read::{Collection, Reader};
use crate::gce::retry::RetryPolicy;
use crate::naming::l4::RbsNames;
use crate::objects::observed::RbsObserved;

/// One GET per named object, the region's zones with the shared instance group's members, and
/// the address holding spec.loadBalancerIP.
pub(crate) async fn observe_rbs(
    gce: &Gce,
    policy: &RetryPolicy,
    names: &RbsNames,
    want_ip: Option<&str>,
) -> Result<(RbsObserved, ObservedLb), GceError> {
    let mut rd = Reader::new(gce, policy, RbsObserved::default());
    rd.read(Collection::Addresses, &names.lb, |o| &mut o.address)
        .await?;
    rd.read(Collection::ForwardingRules, &names.lb, |o| &mut o.forwarding_rule)
        .await?;
    rd.read(Collection::BackendServices, &names.backend, |o| {
        &mut o.backend_service
    })
    .await?;
    let hc = Collection::RegionHealthChecks;
    rd.read(hc, &names.shared_health_check, |o| &mut o.shared_health_check)
        .await?;
    rd.read(hc, &names.backend, |o| &mut o.local_health_check).await?;
    let fw = Collection::Firewalls;
    rd.read(fw, &names.backend, |o| &mut o.nodes_firewall).await?;
    rd.read(fw, &names.shared_health_check_firewall, |o| {
        &mut o.shared_health_check_firewall
    })
    .await?;
    rd.read(fw, &names.local_health_check_firewall, |o| {
        &mut o.local_health_check_firewall
    })
    .await?;
    rd.read(Collection::ForwardingRules, &names.ipv6.rule, |o| {
        &mut o.ipv6_forwarding_rule
    })
    .await?;
    rd.read(fw, &names.ipv6.firewall, |o| &mut o.ipv6_nodes_firewall)
        .await?;
    rd.read(Collection::Addresses, &names.ipv6.rule, |o| &mut o.ipv6_address)
        .await?;
    rd.read(fw, &names.ipv6.shared_health_check_firewall, |o| {
        &mut o.ipv6_shared_health_check_firewall
    })
    .await?;
    rd.read(fw, &names.ipv6.local_health_check_firewall, |o| {
        &mut o.ipv6_local_health_check_firewall
    })
    .await?;
    let mut o = rd.obs;
    let links = backend_lb_tail(gce, policy, rd.links, &names.instance_group, want_ip, &mut o).await?;
    Ok((o, links))
}
