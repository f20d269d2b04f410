//! GCE reads by table: one GET per ([`Collection`], name), 404 = None, converted into the mirror
//! and its selfLink remembered; the one place that knows which client call reads which
//! collection. The LB readers (`observe`, `observe_ilb`, `observe_rbs`) list their objects as rows of a
//! [`Reader`]; lists (`list_all!`) and the address holding an IP are here too.

use std::collections::BTreeMap;

use google_cloud_compute_v1::model;
use google_cloud_gax::paginator::ItemPaginator;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::gce::client::Gce;
use crate::gce::convert::from_model;
use crate::gce::error::GceError;
use crate::gce::ratelimit::QuotaGroup;
use crate::gce::retry::{RetryPolicy, with_retries};
use crate::objects::Address;

/// Objects (`kind/name`, kind = the REST collection) whose state a sync changed since it last
/// observed them; see [`Reader`].
pub(crate) type Touched = std::collections::BTreeSet<String>;

/// A GCE collection an LB's objects live in (regional or global).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Collection {
    Addresses,
    Firewalls,
    HttpHealthChecks,
    HealthChecks,
    /// Regional health checks (RBS NetLBs).
    RegionHealthChecks,
    TargetPools,
    ForwardingRules,
    BackendServices,
}

impl Collection {
    /// The REST name: the `kind` of `kind/name` keys (selfLinks, touched objects).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Collection::Addresses => "addresses",
            Collection::Firewalls => "firewalls",
            Collection::HttpHealthChecks => "httpHealthChecks",
            Collection::HealthChecks => "healthChecks",
            Collection::RegionHealthChecks => "regionHealthChecks",
            Collection::TargetPools => "targetPools",
            Collection::ForwardingRules => "forwardingRules",
            Collection::BackendServices => "backendServices",
        }
    }
}

/// GET with retries; 404 -> None.
pub(crate) async fn get_opt<M, F, Fut>(
    gce: &Gce,
    policy: &RetryPolicy,
    call: &str,
    f: F,
) -> Result<Option<M>, GceError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = google_cloud_gax::Result<M>>,
{
    let result = with_retries(gce, policy, QuotaGroup::Read, || {
        let fut = f();
        async move { fut.await.map_err(|e| GceError::from_gax(call, &e)) }
    })
    .await;
    match result {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// One object of `kind` (404 = None), as the REST JSON.
pub(crate) async fn get_json(
    gce: &Gce,
    policy: &RetryPolicy,
    kind: Collection,
    name: &str,
) -> Result<Option<Value>, GceError> {
    let (p, r) = (gce.project.as_str(), gce.region.as_str());
    let call = format!("get {}/{name}", kind.as_str());
    // One row per collection: its client, and the request's scope and name setters.
    macro_rules! get {
        ($client:ident, $set_name:ident $(, $set_region:ident)?) => {
            get_opt(gce, policy, &call, || {
                gce.$client.get().set_project(p)$(.$set_region(r))?.$set_name(name).send()
            })
            .await?
            .map(|m| serde_json::to_value(&m))
            .transpose()
            .map_err(|e| GceError::new(&call, format!("encoding: {e}")))?
        };
    }
    Ok(match kind {
        Collection::Addresses => get!(addresses, set_address, set_region),
        Collection::Firewalls => get!(firewalls, set_firewall),
        Collection::HttpHealthChecks => get!(http_health_checks, set_http_health_check),
        Collection::HealthChecks => get!(health_checks, set_health_check),
        Collection::RegionHealthChecks => get!(region_health_checks, set_health_check, set_region),
        Collection::TargetPools => get!(target_pools, set_target_pool, set_region),
        Collection::ForwardingRules => get!(forwarding_rules, set_forwarding_rule, set_region),
        Collection::BackendServices => get!(region_backend_services, set_backend_service, set_region),
    })
}

/// Converts a fetched object into its mirror and remembers its selfLink under `key`.
pub(crate) fn keep<T: DeserializeOwned>(
    links: &mut BTreeMap<String, String>,
    key: &str,
    json: Option<Value>,
) -> Result<Option<T>, GceError> {
    let Some(json) = json else { return Ok(None) };
    if let Some(link) = json.get("selfLink").and_then(Value::as_str) {
        links.insert(key.to_owned(), link.to_owned());
    }
    from_model(key, &json).map(Some)
}

/// One observation in progress: GETs into `obs` (the observation of one LB kind) and `links`.
pub(crate) struct Reader<'a, O> {
    pub gce: &'a Gce,
    pub policy: &'a RetryPolicy,
    /// The previous observation's selfLinks and what the sync touched since: an untouched
    /// object keeps its value in `obs` (which starts as the previous observation) and its link.
    pub reuse: Option<(&'a BTreeMap<String, String>, &'a Touched)>,
    pub obs: O,
    pub links: BTreeMap<String, String>,
}

impl<'a, O: Send> Reader<'a, O> {
    /// A reader that GETs every row into `obs`.
    pub(crate) fn new(gce: &'a Gce, policy: &'a RetryPolicy, obs: O) -> Self {
        Reader {
            gce,
            policy,
            reuse: None,
            obs,
            links: BTreeMap::new(),
        }
    }

    /// One row of the table: `kind/name` into the field `slot` selects.
    pub(crate) async fn read<T: DeserializeOwned>(
        &mut self,
        kind: Collection,
        name: &str,
        slot: fn(&mut O) -> &mut Option<T>,
    ) -> Result<(), GceError> {
        let key = format!("{}/{name}", kind.as_str());
        if let Some((links, touched)) = self.reuse
            && !touched.contains(&key)
        {
            if let Some(link) = links.get(&key) {
                self.links.insert(key, link.clone());
            }
            return Ok(());
        }
        let json = get_json(self.gce, self.policy, kind, name).await?;
        *slot(&mut self.obs) = keep(&mut self.links, &key, json)?;
        Ok(())
    }
}

/// A list as a Vec, through the item paginator, with retries of the whole listing.
macro_rules! list_all {
    ($gce:expr, $policy:expr, $call:expr, $req:expr) => {{
        with_retries($gce, $policy, QuotaGroup::Read, || async {
            let mut items = Vec::new();
            let mut it = $req.by_item();
            while let Some(item) = it.next().await {
                items.push(item.map_err(|e| GceError::from_gax($call, &e))?);
            }
            Ok(items)
        })
        .await
    }};
}
pub(crate) use list_all;

/// The regional address holding `ip`, whatever its name (addresses.list with a filter).
pub(crate) async fn find_address_by_ip(
    gce: &Gce,
    policy: &RetryPolicy,
    ip: &str,
) -> Result<Option<Address>, GceError> {
    let filter = format!("address eq {}", ip.replace('.', "\\."));
    let call = format!("list addresses (address {ip})");
    let items: Vec<model::Address> = list_all!(
        gce,
        policy,
        &call,
        gce.addresses
            .list()
            .set_project(&gce.project)
            .set_region(&gce.region)
            .set_filter(filter.clone())
    )?;
    for m in items {
        let a: Address = from_model(&call, &m)?;
        if a.address.as_deref() == Some(ip) {
            return Ok(Some(a));
        }
    }
    Ok(None)
}
