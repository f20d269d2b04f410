//! Reads what GCE holds for an internal load balancer (404 = None).

use crate::gce::client::Gce;
use crate::gce::error::GceError;
use crate::gce::observe::ObservedLb;
use crate::gce::observe_groups::backend_lb_tail;
use crate::gce::read::{Collection, Reader};
use crate::gce::retry::RetryPolicy;
use crate::naming::IlbNames;
use crate::objects::observed::IlbObserved;

/// What GCE holds for one internal LB: one GET per named object, the region's zones (the shared
/// instance group may exist in any of them) with a GET and, where it exists, a listInstances per
/// zone, and the address holding spec.loadBalancerIP.
pub(crate) async fn observe_ilb(
    gce: &Gce,
    policy: &RetryPolicy,
    names: &IlbNames,
    want_ip: Option<&str>,
) -> Result<(IlbObserved, ObservedLb), GceError> {
    let mut rd = Reader::new(gce, policy, IlbObserved::default());
    let lb = &names.lb;
    rd.read(Collection::Addresses, lb, |o| &mut o.address).await?;
    rd.read(Collection::ForwardingRules, lb, |o| &mut o.forwarding_rule)
        .await?;
    rd.read(Collection::BackendServices, lb, |o| &mut o.backend_service)
        .await?;
    let hc = Collection::HealthChecks;
    rd.read(hc, &names.nodes_health_check, |o| &mut o.nodes_health_check)
        .await?;
    rd.read(hc, &names.local_health_check, |o| &mut o.local_health_check)
        .await?;
    let fw = Collection::Firewalls;
    rd.read(fw, &names.firewall, |o| &mut o.firewall).await?;
    rd.read(fw, &names.legacy_firewall, |o| &mut o.legacy_firewall)
        .await?;
    rd.read(fw, &names.nodes_health_check_firewall, |o| {
        &mut o.nodes_health_check_firewall
    })
    .await?;
    rd.read(fw, &names.local_health_check_firewall, |o| {
        &mut o.local_health_check_firewall
    })
    .await?;
    let v6 = &names.ipv6;
    rd.read(Collection::ForwardingRules, &v6.rule, |o| {
        &mut o.ipv6_forwarding_rule
    })
    .await?;
    rd.read(Collection::Addresses, &v6.rule, |o| &mut o.ipv6_address)
        .await?;
    rd.read(fw, &v6.firewall, |o| &mut o.ipv6_firewall).await?;
    rd.read(fw, &v6.shared_health_check_firewall, |o| {
        &mut o.ipv6_nodes_health_check_firewall
    })
    .await?;
    rd.read(fw, &v6.local_health_check_firewall, |o| {
        &mut o.ipv6_local_health_check_firewall
    })
    .await?;
    let mut o = rd.obs;
    let links = backend_lb_tail(gce, policy, rd.links, &names.instance_group, want_ip, &mut o).await?;
    Ok((o, links))
}
