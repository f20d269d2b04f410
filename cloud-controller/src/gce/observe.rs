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
pub struct ObservedLb {
    pub observed: Observed,
    pub self_links: BTreeMap<String, String>,
}

impl ObservedLb {
    pub fn link(&self, kind: &str, name: &str) -> Option<String> {
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
pub type Touched = std::collections::BTreeSet<String>;

pub async fn observe_lb(
    gce: &Gce,
    policy: &RetryPolicy,
    names: &LbNames,
    want_ip: Option<&str>,
) -> Result<ObservedLb, GceError> {
    observe_lb_again(gce, policy, names, want_ip, None).await
}

/// Like [`observe_lb`], but with `reuse = (previous observation, touched)` only the objects the
/// sync's own actions touched since `previous` are fetched again; the rest are taken from
/// `previous`. Within one sync nothing else changes our per-LB objects, so a new LB costs
/// 8 + 1 + ~3 GETs instead of 3 x 8. Shared objects the caller must see fresh (after taking the
/// shared-health-check lock) are observed with `reuse = None`.
pub async fn observe_lb_again(
    gce: &Gce,
    policy: &RetryPolicy,
    names: &LbNames,
    want_ip: Option<&str>,
    reuse: Option<(&ObservedLb, &Touched)>,
) -> Result<ObservedLb, GceError> {
    let (p, r) = (gce.project.as_str(), gce.region.as_str());
    let mut out = ObservedLb::default();
    // Some(previous value) when `kind/name` may be reused (its selfLink is copied along).
    let reused = |out: &mut ObservedLb, kind: &str, name: &str| -> bool {
        let key = format!("{kind}/{name}");
        match reuse {
            Some((prev, touched)) if !touched.contains(&key) => {
                if let Some(link) = prev.self_links.get(&key) {
                    out.self_links.insert(key, link.clone());
                }
                true
            }
            _ => false,
        }
    };
    let prev = reuse.map(|(p, _)| &p.observed);

    if reused(&mut out, "addresses", &names.lb) {
        out.observed.address = prev.and_then(|o| o.address.clone());
    } else {
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
        out.observed.address = keep::<Address>(&mut out, "addresses", &names.lb, m)?;
    }

    for (name, slot) in [
        (&names.firewall, 0),
        (&names.nodes_health_check_firewall, 1),
        (&names.local_health_check_firewall, 2),
    ] {
        let fw = if reused(&mut out, "firewalls", name) {
            prev.and_then(|o| match slot {
                0 => o.firewall.clone(),
                1 => o.nodes_health_check_firewall.clone(),
                _ => o.local_health_check_firewall.clone(),
            })
        } else {
            let call = format!("get firewalls/{name}");
            let m = get_opt(gce, policy, &call, || {
                gce.firewalls.get().set_project(p).set_firewall(name).send()
            })
            .await?;
            keep(&mut out, "firewalls", name, m)?
        };
        match slot {
            0 => out.observed.firewall = fw,
            1 => out.observed.nodes_health_check_firewall = fw,
            _ => out.observed.local_health_check_firewall = fw,
        }
    }
    for (name, local) in [
        (&names.nodes_health_check, false),
        (&names.local_health_check, true),
    ] {
        let hc = if reused(&mut out, "httpHealthChecks", name) {
            prev.and_then(|o| {
                if local {
                    o.local_health_check.clone()
                } else {
                    o.nodes_health_check.clone()
                }
            })
        } else {
            let call = format!("get httpHealthChecks/{name}");
            let m = get_opt(gce, policy, &call, || {
                gce.http_health_checks
                    .get()
                    .set_project(p)
                    .set_http_health_check(name)
                    .send()
            })
            .await?;
            keep(&mut out, "httpHealthChecks", name, m)?
        };
        if local {
            out.observed.local_health_check = hc;
        } else {
            out.observed.nodes_health_check = hc;
        }
    }
    if reused(&mut out, "targetPools", &names.lb) {
        out.observed.target_pool = prev.and_then(|o| o.target_pool.clone());
    } else {
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
        out.observed.target_pool = keep(&mut out, "targetPools", &names.lb, m)?;
    }
    if reused(&mut out, "forwardingRules", &names.lb) {
        out.observed.forwarding_rule = prev.and_then(|o| o.forwarding_rule.clone());
    } else {
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
        out.observed.forwarding_rule = keep(&mut out, "forwardingRules", &names.lb, m)?;
    }

    // The address holding the IP in use: the requested one, else the forwarding rule's.
    let fr_ip = out
        .observed
        .forwarding_rule
        .as_ref()
        .map(|f| f.ip_address.clone());
    let ip = want_ip.map(str::to_owned).or(fr_ip).filter(|ip| !ip.is_empty());
    out.observed.ip_holder = match ip {
        Some(ip) if out.observed.address.as_ref().and_then(|a| a.address.as_deref()) == Some(ip.as_str()) => {
            out.observed.address.clone()
        }
        Some(ip) => find_address_by_ip(gce, policy, &ip).await?,
        None => None,
    };
    // Not read from GCE: whether another pool uses the shared node health check is learnt by
    // trying to delete it (resourceInUseByAnotherResource), as upstream does; listing every target
    // pool cost O(load balancers) per delete. The I/O layer sets it after such an answer.
    out.observed.nodes_health_check_used_elsewhere = false;
    Ok(out)
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
pub async fn forwarding_rule(
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
