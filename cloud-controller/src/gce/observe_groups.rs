//! The part of a backend-service LB's observation that internal and RBS NetLBs share: the
//! shared instance group's members in each zone of the region, and the address holding
//! spec.loadBalancerIP.

use std::collections::BTreeMap;

use google_cloud_compute_v1::model;
use google_cloud_gax::paginator::ItemPaginator;
use serde_json::Value;

use crate::gce::client::Gce;
use crate::gce::convert::to_json;
use crate::gce::error::GceError;
use crate::gce::observe::ObservedLb;
use crate::gce::ratelimit::QuotaGroup;
use crate::gce::read::{find_address_by_ip, get_opt, list_all};
use crate::gce::retry::{RetryPolicy, with_retries};
use crate::objects::Address;
use crate::objects::observed::{IlbObserved, RbsObserved};

/// The observation's fields the tail reads (`address`: our reservation) and fills.
pub(crate) struct BackendLbTail<'a> {
    pub address: &'a Option<Address>,
    pub instance_groups: &'a mut BTreeMap<String, Vec<String>>,
    pub ip_holder: &'a mut Option<Address>,
}

/// An observation of a backend-service LB, whose tail [`backend_lb_tail`] fills.
pub(crate) trait BackendLbObserved {
    fn tail(&mut self) -> BackendLbTail<'_>;
}

macro_rules! backend_lb_observed {
    ($($t:ty),*) => {$(
        impl BackendLbObserved for $t {
            fn tail(&mut self) -> BackendLbTail<'_> {
                BackendLbTail {
                    address: &self.address,
                    instance_groups: &mut self.instance_groups,
                    ip_holder: &mut self.ip_holder,
                }
            }
        }
    )*};
}
backend_lb_observed!(IlbObserved, RbsObserved);

/// Reads the instance group `group` in every zone of the region and the address holding
/// `want_ip` (our reservation when it holds it: no list then); returns the selfLinks, the
/// reader's (`self_links`) and the groups'.
pub(crate) async fn backend_lb_tail(
    gce: &Gce,
    policy: &RetryPolicy,
    self_links: BTreeMap<String, String>,
    group: &str,
    want_ip: Option<&str>,
    obs: &mut impl BackendLbObserved,
) -> Result<ObservedLb, GceError> {
    let out = obs.tail();
    let mut links = ObservedLb {
        self_links,
        ..ObservedLb::default()
    };
    for zone in region_zones(gce, policy).await? {
        if let Some(members) = read_group(gce, policy, &zone, group, &mut links).await? {
            out.instance_groups.insert(zone, members);
        }
    }
    *out.ip_holder = match want_ip {
        Some(ip) if out.address.as_ref().and_then(|a| a.address.as_deref()) == Some(ip) => {
            out.address.clone()
        }
        Some(ip) => find_address_by_ip(gce, policy, ip).await?,
        None => None,
    };
    Ok(links)
}

/// The zones of the region (by name).
async fn region_zones(gce: &Gce, policy: &RetryPolicy) -> Result<Vec<String>, GceError> {
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
async fn read_group(
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
