//! Reads what GCE holds for an external load balancer, into the domain's plain types: one GET per
//! object (404 = None), the address holding the LB's IP; the read helpers the other readers
//! (`observe_ilb`, `lookup`) share. Target pools are never listed (see `lb::delete` for the
//! shared health check).

use std::collections::BTreeMap;

use google_cloud_compute_v1::model;
use google_cloud_gax::paginator::ItemPaginator;
use serde_json::Value;

use crate::gce::client::Gce;
use crate::gce::convert::{from_model, to_json};
use crate::gce::error::GceError;
use crate::gce::ratelimit::QuotaGroup;
use crate::gce::retry::{RetryPolicy, with_retries};
use crate::naming::LbNames;
use crate::objects::Address;
use crate::objects::observed::Observed;

/// What GCE holds for one LB plus the selfLinks of what exists (name -> selfLink), for the
/// CloudLoadBalancer record.
#[derive(Debug, Clone, Default)]
pub(crate) struct ObservedLb {
    pub observed: Observed,
    pub self_links: BTreeMap<String, String>,
}

impl ObservedLb {
    pub(crate) fn link(&self, kind: &str, name: &str) -> Option<String> {
        self.self_links.get(&format!("{kind}/{name}")).cloned()
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

/// Converts a fetched model into its mirror and remembers its selfLink under `kind/name`.
pub(crate) fn keep<T: serde::de::DeserializeOwned>(
    out: &mut ObservedLb,
    kind: &str,
    name: &str,
    m: Option<impl serde::Serialize>,
) -> Result<Option<T>, GceError> {
    let Some(m) = m else { return Ok(None) };
    let json = to_json(&m);
    if let Some(link) = json.get("selfLink").and_then(Value::as_str) {
        out.self_links.insert(format!("{kind}/{name}"), link.to_owned());
    }
    from_model(&format!("{kind}/{name}"), &m).map(Some)
}

/// Objects (`kind/name`, kind = the REST collection) whose state a sync changed since it last
/// observed them; see [`observe_lb_again`].
pub(crate) type Touched = std::collections::BTreeSet<String>;

/// One GET per object of the LB (404 = None) and the address holding its IP. With `reuse =
/// (previous observation, touched)` only the objects the sync's own actions touched since
/// `previous` are fetched again; the rest are taken from `previous`. Within one sync nothing else changes our per-LB objects, so a new LB costs
/// 8 + 1 + ~3 GETs instead of 3 x 8. Shared objects the caller must see fresh (after taking the
/// shared-health-check lock) are observed with `reuse = None`.
pub(crate) async fn observe_lb_again(
    gce: &Gce,
    policy: &RetryPolicy,
    names: &LbNames,
    want_ip: Option<&str>,
    reuse: Option<(&ObservedLb, &Touched)>,
) -> Result<ObservedLb, GceError> {
    let mut rd = Reading {
        reuse,
        out: ObservedLb::default(),
    };
    read_address(gce, policy, names, &mut rd).await?;
    read_firewalls(gce, policy, names, &mut rd).await?;
    read_health_checks(gce, policy, names, &mut rd).await?;
    read_pool_and_rule(gce, policy, names, &mut rd).await?;
    let mut out = rd.out;
    out.observed.ip_holder = ip_holder(gce, policy, want_ip, &out.observed).await?;
    // Not read from GCE: whether another pool uses the shared node health check is learnt by
    // trying to delete it (resourceInUseByAnotherResource), as upstream does; listing every target
    // pool cost O(load balancers) per delete. The I/O layer sets it after such an answer.
    out.observed.nodes_health_check_used_elsewhere = false;
    Ok(out)
}

/// One observation in progress: the previous one and what changed since, and what was read.
struct Reading<'a> {
    reuse: Option<(&'a ObservedLb, &'a Touched)>,
    out: ObservedLb,
}

impl<'a> Reading<'a> {
    /// The previous observation when `kind/name` may be taken from it (not touched since); its
    /// selfLink is copied along.
    fn previous(&mut self, kind: &str, name: &str) -> Option<&'a Observed> {
        let (prev, touched) = self.reuse?;
        let key = format!("{kind}/{name}");
        if touched.contains(&key) {
            return None;
        }
        if let Some(link) = prev.self_links.get(&key) {
            self.out.self_links.insert(key, link.clone());
        }
        Some(&prev.observed)
    }
}

async fn read_address(
    gce: &Gce,
    policy: &RetryPolicy,
    names: &LbNames,
    rd: &mut Reading<'_>,
) -> Result<(), GceError> {
    let (p, r) = (gce.project.as_str(), gce.region.as_str());
    rd.out.observed.address = match rd.previous("addresses", &names.lb) {
        Some(prev) => prev.address.clone(),
        None => {
            let call = format!("get addresses/{}", names.lb);
            let m = get_opt(gce, policy, &call, || {
                gce.addresses
                    .get()
                    .set_project(p)
                    .set_region(r)
                    .set_address(&names.lb)
                    .send()
            })
            .await?;
            keep::<Address>(&mut rd.out, "addresses", &names.lb, m)?
        }
    };
    Ok(())
}

async fn read_firewalls(
    gce: &Gce,
    policy: &RetryPolicy,
    names: &LbNames,
    rd: &mut Reading<'_>,
) -> Result<(), GceError> {
    let p = gce.project.as_str();
    for (name, slot) in [
        (&names.firewall, 0),
        (&names.nodes_health_check_firewall, 1),
        (&names.local_health_check_firewall, 2),
    ] {
        let fw = match rd.previous("firewalls", name) {
            Some(prev) => match slot {
                0 => prev.firewall.clone(),
                1 => prev.nodes_health_check_firewall.clone(),
                _ => prev.local_health_check_firewall.clone(),
            },
            None => {
                let call = format!("get firewalls/{name}");
                let m = get_opt(gce, policy, &call, || {
                    gce.firewalls.get().set_project(p).set_firewall(name).send()
                })
                .await?;
                keep(&mut rd.out, "firewalls", name, m)?
            }
        };
        match slot {
            0 => rd.out.observed.firewall = fw,
            1 => rd.out.observed.nodes_health_check_firewall = fw,
            _ => rd.out.observed.local_health_check_firewall = fw,
        }
    }
    Ok(())
}

async fn read_health_checks(
    gce: &Gce,
    policy: &RetryPolicy,
    names: &LbNames,
    rd: &mut Reading<'_>,
) -> Result<(), GceError> {
    let p = gce.project.as_str();
    for (name, local) in [
        (&names.nodes_health_check, false),
        (&names.local_health_check, true),
    ] {
        let hc = match rd.previous("httpHealthChecks", name) {
            Some(prev) if local => prev.local_health_check.clone(),
            Some(prev) => prev.nodes_health_check.clone(),
            None => {
                let call = format!("get httpHealthChecks/{name}");
                let m = get_opt(gce, policy, &call, || {
                    gce.http_health_checks
                        .get()
                        .set_project(p)
                        .set_http_health_check(name)
                        .send()
                })
                .await?;
                keep(&mut rd.out, "httpHealthChecks", name, m)?
            }
        };
        if local {
            rd.out.observed.local_health_check = hc;
        } else {
            rd.out.observed.nodes_health_check = hc;
        }
    }
    Ok(())
}

async fn read_pool_and_rule(
    gce: &Gce,
    policy: &RetryPolicy,
    names: &LbNames,
    rd: &mut Reading<'_>,
) -> Result<(), GceError> {
    let (p, r) = (gce.project.as_str(), gce.region.as_str());
    rd.out.observed.target_pool = match rd.previous("targetPools", &names.lb) {
        Some(prev) => prev.target_pool.clone(),
        None => {
            let call = format!("get targetPools/{}", names.lb);
            let m = get_opt(gce, policy, &call, || {
                gce.target_pools
                    .get()
                    .set_project(p)
                    .set_region(r)
                    .set_target_pool(&names.lb)
                    .send()
            })
            .await?;
            keep(&mut rd.out, "targetPools", &names.lb, m)?
        }
    };
    rd.out.observed.forwarding_rule = match rd.previous("forwardingRules", &names.lb) {
        Some(prev) => prev.forwarding_rule.clone(),
        None => {
            let call = format!("get forwardingRules/{}", names.lb);
            let m = get_opt(gce, policy, &call, || {
                gce.forwarding_rules
                    .get()
                    .set_project(p)
                    .set_region(r)
                    .set_forwarding_rule(&names.lb)
                    .send()
            })
            .await?;
            keep(&mut rd.out, "forwardingRules", &names.lb, m)?
        }
    };
    Ok(())
}

/// The address holding the IP in use: the requested one, else the forwarding rule's.
async fn ip_holder(
    gce: &Gce,
    policy: &RetryPolicy,
    want_ip: Option<&str>,
    o: &Observed,
) -> Result<Option<Address>, GceError> {
    let fr_ip = o.forwarding_rule.as_ref().map(|f| f.ip_address.clone());
    let ip = want_ip.map(str::to_owned).or(fr_ip).filter(|ip| !ip.is_empty());
    Ok(match ip {
        Some(ip) if o.address.as_ref().and_then(|a| a.address.as_deref()) == Some(ip.as_str()) => {
            o.address.clone()
        }
        Some(ip) => find_address_by_ip(gce, policy, &ip).await?,
        None => None,
    })
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

/// The forwarding rule named `name` alone (404 = None): whether a Service that carries none of
/// our finalizers yet is another controller's (`lb::ownership::forwarding_rule_is_foreign`).
pub(crate) async fn forwarding_rule(
    gce: &Gce,
    policy: &RetryPolicy,
    name: &str,
) -> Result<Option<crate::objects::ForwardingRule>, GceError> {
    let call = format!("get forwardingRules/{name}");
    let m = get_opt(gce, policy, &call, || {
        gce.forwarding_rules
            .get()
            .set_project(&gce.project)
            .set_region(&gce.region)
            .set_forwarding_rule(name)
            .send()
    })
    .await?;
    m.map(|m| from_model(&call, &m)).transpose()
}
