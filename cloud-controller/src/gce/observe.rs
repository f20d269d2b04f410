//! Reads what GCE holds for an external load balancer, into the domain's plain types: one row of
//! `gce::read`'s table per object (404 = None), and the address holding the LB's IP. Target
//! pools are never listed (see `lb::external::delete` for the shared health check).

use std::collections::BTreeMap;

use crate::gce::client::Gce;
use crate::gce::convert::from_model;
use crate::gce::error::GceError;
use crate::gce::read::{Collection, Reader, Touched, find_address_by_ip, get_json};
use crate::gce::retry::RetryPolicy;
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

/// One GET per object of the LB (404 = None) and the address holding its IP. With `reuse =
/// (previous observation, touched)` only the objects the sync's own actions touched since
/// `previous` are fetched again; the rest are taken from `previous`. Within one sync nothing
/// else changes our per-LB objects, so a new LB costs 8 + 1 + ~3 GETs instead of 3 x 8. Shared
/// objects the caller must see fresh (after taking the shared-health-check lock) are observed
/// with `reuse = None`.
pub(crate) async fn observe_lb_again(
    gce: &Gce,
    policy: &RetryPolicy,
    names: &LbNames,
    want_ip: Option<&str>,
    reuse: Option<(&ObservedLb, &Touched)>,
) -> Result<ObservedLb, GceError> {
    let prev = reuse.map(|(prev, _)| prev.observed.clone()).unwrap_or_default();
    let mut rd = Reader::new(gce, policy, prev);
    rd.reuse = reuse.map(|(prev, touched)| (&prev.self_links, touched));
    let (lb, fw) = (&names.lb, Collection::Firewalls);
    rd.read(Collection::Addresses, lb, |o| &mut o.address).await?;
    rd.read(fw, &names.firewall, |o| &mut o.firewall).await?;
    rd.read(fw, &names.nodes_health_check_firewall, |o| {
        &mut o.nodes_health_check_firewall
    })
    .await?;
    rd.read(fw, &names.local_health_check_firewall, |o| {
        &mut o.local_health_check_firewall
    })
    .await?;
    let hc = Collection::HttpHealthChecks;
    rd.read(hc, &names.nodes_health_check, |o| &mut o.nodes_health_check)
        .await?;
    rd.read(hc, &names.local_health_check, |o| &mut o.local_health_check)
        .await?;
    rd.read(Collection::TargetPools, lb, |o| &mut o.target_pool)
        .await?;
    rd.read(Collection::ForwardingRules, lb, |o| &mut o.forwarding_rule)
        .await?;
    let mut out = ObservedLb {
        observed: rd.obs,
        self_links: rd.links,
    };
    out.observed.ip_holder = ip_holder(gce, policy, want_ip, &out.observed).await?;
    // Not read from GCE: whether another pool uses the shared node health check is learnt by
    // trying to delete it (resourceInUseByAnotherResource), as upstream does; listing every target
    // pool cost O(load balancers) per delete. The I/O layer sets it after such an answer.
    out.observed.nodes_health_check_used_elsewhere = false;
    Ok(out)
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

/// The forwarding rule named `name` alone (404 = None): whether a Service that carries none of
/// our finalizers yet is another controller's (`lb::ownership::forwarding_rule_is_foreign`).
pub(crate) async fn forwarding_rule(
    gce: &Gce,
    policy: &RetryPolicy,
    name: &str,
) -> Result<Option<crate::objects::ForwardingRule>, GceError> {
    let json = get_json(gce, policy, Collection::ForwardingRules, name).await?;
    let what = format!("forwardingRules/{name}");
    json.map(|m| from_model(&what, &m)).transpose()
}
