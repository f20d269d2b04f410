//! Reads for the route and node controllers: the cluster's routes, and instance facts for node
//! initialisation and the node lifecycle check.

use google_cloud_compute_v1::model;
use google_cloud_gax::paginator::ItemPaginator;

use crate::gce::client::Gce;
use crate::gce::convert::{from_model, to_json};
use crate::gce::error::GceError;
use crate::gce::ratelimit::QuotaGroup;
use crate::gce::read::{get_opt, list_all};
use crate::gce::retry::{RetryPolicy, with_retries};
use crate::objects::{InstanceFacts, InstanceLookup, Route};

/// Every route whose name starts with `prefix`.
pub(crate) async fn list_routes(
    gce: &Gce,
    policy: &RetryPolicy,
    prefix: &str,
) -> Result<Vec<Route>, GceError> {
    let call = "list routes";
    let filter = format!("name eq {prefix}.*");
    let items: Vec<model::Route> = list_all!(
        gce,
        policy,
        call,
        gce.routes
            .list()
            .set_project(&gce.project)
            .set_filter(filter.clone())
    )?;
    items.iter().map(|m| from_model(call, m)).collect()
}

/// instances.get in `zone`: facts for node initialisation, or NotFound.
pub(crate) async fn instance_facts(
    gce: &Gce,
    policy: &RetryPolicy,
    zone: &str,
    name: &str,
) -> Result<Option<InstanceFacts>, GceError> {
    let call = format!("get zones/{zone}/instances/{name}");
    let m = get_opt(gce, policy, &call, || {
        gce.instances
            .get()
            .set_project(&gce.project)
            .set_zone(zone)
            .set_instance(name)
            .send()
    })
    .await?;
    let Some(m) = m else { return Ok(None) };
    let v = to_json(&m);
    let mut internal = Vec::new();
    let mut external = Vec::new();
    for nic in v["networkInterfaces"].as_array().into_iter().flatten() {
        if let Some(ip) = nic["networkIP"].as_str() {
            internal.push(ip.to_owned());
        }
        for ac in nic["accessConfigs"].as_array().into_iter().flatten() {
            if let Some(ip) = ac["natIP"].as_str() {
                external.push(ip.to_owned());
            }
        }
        // cloud-provider-gcp's getIPV6AddressFromInterface: the internal IPv6, else an EXTERNAL one.
        let ipv6 = nic["ipv6Address"].as_str().or_else(|| {
            (nic["ipv6AccessType"] == "EXTERNAL")
                .then(|| nic["ipv6AccessConfigs"].as_array())
                .flatten()
                .and_then(|acs| {
                    acs.iter()
                        .filter_map(|ac| ac["externalIpv6"].as_str())
                        .next_back()
                })
        });
        if let Some(ip) = ipv6.filter(|ip| !ip.is_empty()) {
            internal.push(ip.to_owned());
        }
    }
    Ok(Some(InstanceFacts {
        project: gce.project.clone(),
        zone: zone.to_owned(),
        name: name.to_owned(),
        machine_type: v["machineType"].as_str().unwrap_or_default().to_owned(),
        internal_ips: internal,
        external_ips: external,
    }))
}

/// Whether the instance exists (for the node lifecycle check).
pub(crate) async fn instance_lookup(
    gce: &Gce,
    policy: &RetryPolicy,
    zone: &str,
    name: &str,
) -> Result<InstanceLookup, GceError> {
    Ok(match instance_facts(gce, policy, zone, name).await? {
        Some(_) => InstanceLookup::Exists,
        None => InstanceLookup::NotFound,
    })
}
