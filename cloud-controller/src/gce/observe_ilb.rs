//! Reads what GCE holds for an internal load balancer (404 = None).

use google_cloud_compute_v1::model;
use google_cloud_gax::paginator::ItemPaginator;
use serde_json::Value;

use crate::gce::client::Gce;
use crate::gce::convert::to_json;
use crate::gce::error::GceError;
use crate::gce::observe::ObservedLb;
use crate::gce::ratelimit::QuotaGroup;
use crate::gce::read::{Collection, Reader, find_address_by_ip, get_opt, list_all};
use crate::gce::retry::{RetryPolicy, with_retries};
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
    let (mut o, mut links) = (
        rd.obs,
        ObservedLb {
            self_links: rd.links,
            ..ObservedLb::default()
        },
    );
    for zone in region_zones(gce, policy).await? {
        if let Some(members) = read_group(gce, policy, &zone, &names.instance_group, &mut links).await? {
            o.instance_groups.insert(zone, members);
        }
    }
    o.ip_holder = match want_ip {
        Some(ip) if o.address.as_ref().and_then(|a| a.address.as_deref()) == Some(ip) => o.address.clone(),
        Some(ip) => find_address_by_ip(gce, policy, ip).await?,
        None => None,
    };
    Ok((o, links))
}

/// The zones of the region (by name).
pub(crate) async fn region_zones(gce: &Gce, policy: &RetryPolicy) -> Result<Vec<String>, GceError> {
    let (p, r) = (gce.project.as_str(), gce.region.as_str());
    let call = format!("get regions/{r}");
    let region = with_retries(gce, policy, QuotaGroup::Read, || async {
        gce.regions
            .get()
            .set_project(p)
            .set_region(r)
            .send()
            .await
            .map_err(|e| GceError::from_gax(&call, &e))
    })
    .await?;
    Ok(region
        .zones
        .iter()
        .map(|z| crate::objects::link_name(z).to_owned())
        .collect())
}

/// The members (sorted instance URLs) of the shared instance group in `zone`; None without one.
pub(crate) async fn read_group(
    gce: &Gce,
    policy: &RetryPolicy,
    zone: &str,
    group: &str,
    links: &mut ObservedLb,
) -> Result<Option<Vec<String>>, GceError> {
    let p = gce.project.as_str();
    let call = format!("get zones/{zone}/instanceGroups/{group}");
    let m = get_opt(gce, policy, &call, || {
        gce.instance_groups
            .get()
            .set_project(p)
            .set_zone(zone)
            .set_instance_group(group)
            .send()
    })
    .await?;
    let Some(m) = m else { return Ok(None) };
    if let Some(link) = to_json(&m).get("selfLink").and_then(Value::as_str) {
        links
            .self_links
            .insert(format!("instanceGroups/{zone}/{group}"), link.to_owned());
    }
    let call = format!("listInstances zones/{zone}/instanceGroups/{group}");
    let body: model::InstanceGroupsListInstancesRequest =
        serde_json::from_value(serde_json::json!({ "instanceState": "ALL" }))
            .map_err(|e| GceError::new(&call, format!("request body: {e}")))?;
    let items: Vec<model::InstanceWithNamedPorts> = list_all!(
        gce,
        policy,
        &call,
        gce.instance_groups
            .list_instances()
            .set_project(p)
            .set_zone(zone)
            .set_instance_group(group)
            .set_body(body.clone())
    )?;
    let mut members: Vec<String> = items.into_iter().filter_map(|i| i.instance).collect();
    members.sort();
    Ok(Some(members))
}
