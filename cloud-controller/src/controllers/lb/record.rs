//! The per-Service `CloudLoadBalancer` record: names and selfLinks of every GCE object, the
//! pool's instances, conditions and the last error. Written with server-side apply, and only
//! when something other than the sync time changed. Without the CRD installed the record is
//! skipped (logged once per sync at debug): load balancing does not depend on it.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use svcnet_crds::{
    CloudLoadBalancer, CloudLoadBalancerStatus, ConditionStatus, ConditionType, GceResourceRef, GceResources,
    PortStatus, TargetPoolStatus, new_condition,
};

use crate::gce::observe::ObservedLb;
use crate::naming::{GuardNames, LbNames};
use crate::objects::{BackendService, ForwardingRule};

pub(crate) const FIELD_MANAGER: &str = "svcnet-cloud-controller";

/// The status for a sync that ended with `error` (None = success), built on the previous status
/// so condition transition times survive.
pub(crate) fn build_status(
    svc: &Service,
    previous: Option<&CloudLoadBalancerStatus>,
    names: Option<&LbNames>,
    obs: Option<&ObservedLb>,
    ingress_ip: Option<&str>,
    error: Option<&str>,
) -> CloudLoadBalancerStatus {
    let mut st = previous.cloned().unwrap_or_default();
    let now = Time(Timestamp::now());
    let generation = svc.metadata.generation;
    if let (Some(names), Some(obs)) = (names, obs) {
        st.ingress_ip = ingress_ip.map(str::to_owned).or(st.ingress_ip.take());
        st.gce = Some(external_resources(names, obs));
        st.set_target_pool(target_pool_status(obs));
    }
    let ports = svc
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .map(|ports| {
            ports
                .iter()
                .map(|p| PortStatus::new(p.port, p.protocol.clone().unwrap_or_else(|| "TCP".into())))
                .collect()
        })
        .unwrap_or_default();
    st.set_ports(ports);
    st.last_error = error.map(str::to_owned);
    let ready = error.is_none();
    let (reason, message) = match error {
        None => ("LoadBalancerEnsured", "GCE objects match the Service".to_owned()),
        Some(e) => ("SyncFailed", e.to_owned()),
    };
    st.set_condition(new_condition(
        ConditionType::Ready,
        ConditionStatus::from_bool(ready),
        reason,
        message,
        generation,
        now.clone(),
    ));
    st.observed_generation = generation;
    st
}

/// The record's view of an external LB's objects: what exists, and only the health check this
/// LB's pool uses (the shared one may exist for others).
fn external_resources(names: &LbNames, obs: &ObservedLb) -> GceResources {
    let o = &obs.observed;
    let fws = [
        &o.firewall,
        &o.nodes_health_check_firewall,
        &o.local_health_check_firewall,
    ];
    let backend_checks = o.target_pool.as_ref().map(|p| p.health_checks.as_slice());
    let (firewalls, health_checks) = guards(
        obs,
        names,
        fws.map(Option::is_some),
        backend_checks,
        "httpHealthChecks",
    );
    GceResources {
        address: o
            .address
            .as_ref()
            .map(|a| resource_ref(obs, "addresses", &a.name)),
        forwarding_rule: o
            .forwarding_rule
            .as_ref()
            .map(|f| resource_ref(obs, "forwardingRules", &f.name)),
        target_pool: None,
        firewalls,
        health_checks,
        load_balancing_scheme: Some("EXTERNAL".into()),
        backend_service: None,
        instance_groups: Vec::new(),
    }
}

/// A record reference to `name` in the GCE collection `kind`.
pub(crate) fn resource_ref(links: &ObservedLb, kind: &str, name: &str) -> GceResourceRef {
    GceResourceRef {
        name: name.to_owned(),
        self_link: links.link(kind, name),
    }
}

/// The record's firewalls and health checks, alike for external and internal LBs: each of the
/// three firewalls of `names` that exists (`exists`, in [`GuardNames::firewalls`] order), and each
/// of its two health checks that the LB's backend lists (`backend_checks`: the target pool's or
/// backend service's check links; a shared check that exists for other LBs only is not this
/// LB's), in the checks' collection `check_kind`.
pub(crate) fn guards(
    links: &ObservedLb,
    names: &impl GuardNames,
    exists: [bool; 3],
    backend_checks: Option<&[String]>,
    check_kind: &str,
) -> (Vec<GceResourceRef>, Vec<GceResourceRef>) {
    let firewalls = exists
        .into_iter()
        .zip(names.firewalls())
        .filter(|(exists, _)| *exists)
        .map(|(_, name)| resource_ref(links, "firewalls", name))
        .collect();
    let used: Vec<&str> = backend_checks
        .unwrap_or_default()
        .iter()
        .map(|l| crate::objects::link_name(l))
        .collect();
    let checks = names
        .health_checks()
        .into_iter()
        .filter(|name| used.contains(&name.as_str()))
        .map(|name| resource_ref(links, check_kind, name))
        .collect();
    (firewalls, checks)
}

/// What a backend-service LB (internal or RBS) holds, for its record.
pub(crate) struct BackendServiceLb<'a, N> {
    pub names: &'a N,
    pub instance_group: &'a str,
    /// `EXTERNAL` or `INTERNAL`.
    pub scheme: &'static str,
    /// The health checks' collection (`healthChecks` or `regionHealthChecks`).
    pub check_kind: &'static str,
    pub forwarding_rule: Option<&'a ForwardingRule>,
    pub backend_service: Option<&'a BackendService>,
    /// Which of the three firewalls exist, in [`GuardNames::firewalls`] order.
    pub firewalls: [bool; 3],
    /// Zones holding the shared instance group.
    pub zones: Vec<&'a str>,
}

/// The record's view of a backend-service LB: scheme, rule, backend service, firewalls, the
/// health checks its backend service uses, and the instance groups.
pub(crate) fn backend_service_resources<N: GuardNames>(
    links: &ObservedLb,
    lb: BackendServiceLb<'_, N>,
) -> GceResources {
    let backend_checks = lb.backend_service.map(|b| b.health_checks.as_slice());
    let (firewalls, health_checks) = guards(links, lb.names, lb.firewalls, backend_checks, lb.check_kind);
    GceResources {
        address: None,
        forwarding_rule: lb
            .forwarding_rule
            .map(|f| resource_ref(links, "forwardingRules", &f.name)),
        target_pool: None,
        firewalls,
        health_checks,
        load_balancing_scheme: Some(lb.scheme.to_owned()),
        backend_service: lb
            .backend_service
            .map(|b| resource_ref(links, "backendServices", &b.name)),
        instance_groups: lb
            .zones
            .into_iter()
            .map(|zone| GceResourceRef {
                name: lb.instance_group.to_owned(),
                self_link: links.link("instanceGroups", &format!("{zone}/{}", lb.instance_group)),
            })
            .collect(),
    }
}

/// The pool's name, selfLink and instances (sorted names).
fn target_pool_status(obs: &ObservedLb) -> Option<TargetPoolStatus> {
    obs.observed.target_pool.as_ref().map(|p| {
        let mut instances: Vec<String> = p
            .instances
            .iter()
            .map(|i| crate::objects::link_name(i).to_owned())
            .collect();
        instances.sort();
        TargetPoolStatus {
            name: p.name.clone(),
            self_link: obs.link("targetPools", &p.name),
            instances,
        }
    })
}

/// Writes the record when it changed (ignoring the sync time). Returns whether it wrote.
pub(crate) async fn write(client: &kube::Client, svc: &Service, mut status: CloudLoadBalancerStatus) -> bool {
    let Ok(clb) = CloudLoadBalancer::for_service(svc) else {
        return false;
    };
    let ns = svc.metadata.namespace.clone().unwrap_or_default();
    let name = clb.metadata.name.clone().unwrap_or_default();
    let api: Api<CloudLoadBalancer> = Api::namespaced(client.clone(), &ns);
    let existing = match api.get_opt(&name).await {
        Ok(v) => v,
        Err(err) => {
            tracing::debug!(%err, "CloudLoadBalancer not available; record skipped");
            return false;
        }
    };
    let mut old = existing.as_ref().and_then(|c| c.status.clone());
    if let Some(old) = old.as_mut() {
        old.last_sync_time = None;
    }
    status.last_sync_time = None;
    let same_spec = existing.as_ref().is_some_and(|c| c.spec == clb.spec);
    if same_spec && old.as_ref() == Some(&status) {
        return false;
    }
    status.last_sync_time = Some(Time(Timestamp::now()));
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    if !same_spec && let Err(err) = api.patch(&name, &pp, &Patch::Apply(&clb)).await {
        if matches!(&err, kube::Error::Api(s) if s.code == 404) {
            tracing::debug!("CloudLoadBalancer CRD not installed; record skipped");
        } else {
            tracing::warn!(%err, "writing CloudLoadBalancer failed");
        }
        return false;
    }
    let body = match status.apply_patch() {
        Ok(b) => b,
        Err(err) => {
            tracing::warn!(%err, "encoding CloudLoadBalancer status failed");
            return false;
        }
    };
    if let Err(err) = api.patch_status(&name, &pp, &Patch::Apply(&body)).await {
        tracing::warn!(%err, "writing CloudLoadBalancer status failed");
        return false;
    }
    true
}

/// Reads the current status (None when absent or the CRD is not installed).
pub(crate) async fn current(client: &kube::Client, svc: &Service) -> Option<CloudLoadBalancerStatus> {
    let ns = svc.metadata.namespace.clone().unwrap_or_default();
    let name = svc.metadata.name.clone()?;
    let api: Api<CloudLoadBalancer> = Api::namespaced(client.clone(), &ns);
    api.get_opt(&name).await.ok().flatten().and_then(|c| c.status)
}

/// Deletes the record once the load balancer is gone (no garbage collector is assumed).
pub(crate) async fn delete(client: &kube::Client, svc: &Service) {
    let ns = svc.metadata.namespace.clone().unwrap_or_default();
    let Some(name) = svc.metadata.name.clone() else {
        return;
    };
    let api: Api<CloudLoadBalancer> = Api::namespaced(client.clone(), &ns);
    if let Err(err) = api.delete(&name, &DeleteParams::default()).await
        && !matches!(&err, kube::Error::Api(s) if s.code == 404)
    {
        tracing::debug!(%err, "deleting CloudLoadBalancer failed");
    }
}

#[cfg(test)]
mod tests;
