//! Internal load balancers in the service controller: their rounds (`rounds::internal`, through
//! the driver external LBs use too), then status, events and record. The whole sync holds the
//! shared-resource lock: internal LBs share the instance groups and the node health check, which
//! a teardown may delete.
//!
//! Never imports: crate::controllers::lb::external, crate::controllers::lb::rounds::external.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use svcnet_crds::GceResources;

use crate::controllers::lb::ctx::LbCtx;
use crate::controllers::lb::record;
use crate::controllers::lb::report::{
    ServiceEvents, converged_ips, deleted, invalid_service, obj_ref, patch_annotations, sync_failed,
};
use crate::controllers::lb::rounds::RealGce;
use crate::controllers::lb::rounds::internal::{IlbEnsured, IlbInput, delete_ilb_rounds, ensure_ilb_rounds};
use crate::controllers::{Shared, SyncError};
use crate::gce::observe::ObservedLb;
use crate::lb::families::{is_missing_ipv6_range, no_internal_ipv6_range, ordered_ingress_ips};
use crate::lb::internal::IlbSpec;
use crate::lb::internal::delete::Teardown;
use crate::lb::internal::ipv6::{IPV6_STATUS_ANNOTATION_KEYS, ipv6_status_annotations};
use crate::naming::IlbNames;
use crate::objects::SCHEME_INTERNAL;
use crate::objects::observed::IlbObserved;

fn names_of(svc: &Service, sh: &Shared) -> crate::Result<IlbNames> {
    let uid = svc.metadata.uid.clone().unwrap_or_default();
    IlbNames::new(&uid, &sh.cfg.cluster_id, &crate::lb::spec::service_object(svc))
}

/// Builds or repairs the internal LB; Ok(requeue) with status and record written.
pub(crate) async fn ensure_ilb(
    svc: &Service,
    ctx: &LbCtx,
) -> Result<kube::runtime::controller::Action, SyncError> {
    let sh = &ctx.shared;
    let oref = obj_ref(svc);
    let (names, spec) = match names_of(svc, sh).and_then(|n| Ok((n, IlbSpec::from_service(svc)?))) {
        Ok(x) => x,
        Err(e) => return Ok(invalid_service(svc, sh, &e).await),
    };
    let events = ServiceEvents { sh, oref };
    let input = IlbInput {
        svc,
        spec: &spec,
        names: &names,
        cfg: &sh.cfg,
        nodes: &|| sh.node_list(),
    };
    let _guard = ctx.shared_hc.lock().await;
    let (plan, obs, announced) = match ensure_ilb_rounds(&RealGce::new(sh), &events, input).await {
        Ok(IlbEnsured::Converged { plan, obs, announced }) => (plan, obs, announced),
        Ok(IlbEnsured::Invalid(e)) => return Ok(invalid_service(svc, sh, &e).await),
        Err(f) => {
            let e = explain_subnet(f.error, &spec, &sh.cfg);
            return Err(sync_failed(svc, sh, None, None, e).await);
        }
    };
    let (o, links) = *obs;
    let ips = ordered_ingress_ips(svc, plan.ingress_ip.as_deref(), plan.ingress_ipv6.as_deref());
    let want = if spec.base.ipv6 {
        ipv6_status_annotations(&names, &spec)
            .into_iter()
            .map(|(k, v)| (k, Some(v)))
            .collect()
    } else {
        BTreeMap::new()
    };
    patch_annotations(svc, sh, &IPV6_STATUS_ANNOTATION_KEYS, &want).await?;
    let done = announced.then_some((crate::lb::EVENT_ENSURED, "Ensured load balancer"));
    converged_ips(svc, sh, &ips, done).await?;
    let prev = record::current(&sh.client, svc).await;
    let mut st = record::build_status(svc, prev.as_ref(), None, None, None, None);
    st.ingress_ip = ips.into_iter().next();
    st.gce = Some(gce_resources(&names, &o, &links));
    record::write(&sh.client, svc, st).await;
    Ok(kube::runtime::controller::Action::requeue(sh.tuning.lb_resync))
}

/// GCE's bare "subnetwork cannot be found" becomes an error naming the Service and the
/// annotation (or cluster setting) that chose the subnetwork; its refusal of an IPv6 address in a
/// subnetwork without an internal IPv6 range becomes ingress-gce's user error.
fn explain_subnet(e: SyncError, spec: &IlbSpec, cfg: &crate::config::Config) -> SyncError {
    match e {
        SyncError::Gce(g) if crate::lb::internal::is_missing_subnet(g.status, &g.message) => {
            SyncError::Explained {
                hint: spec.missing_subnet_hint(cfg),
                source: g,
            }
        }
        SyncError::Gce(g) if spec.base.ipv6 && is_missing_ipv6_range(g.status, &g.message) => {
            let subnet = spec.subnet.as_deref().unwrap_or(&cfg.subnetwork);
            SyncError::Explained {
                hint: no_internal_ipv6_range(&spec.base.object, subnet).to_string(),
                source: g,
            }
        }
        e => e,
    }
}

/// The CloudLoadBalancer record's view of an internal LB.
fn gce_resources(names: &IlbNames, o: &IlbObserved, links: &ObservedLb) -> GceResources {
    let fws = [
        &o.firewall,
        &o.nodes_health_check_firewall,
        &o.local_health_check_firewall,
    ];
    record::backend_service_resources(
        links,
        record::BackendServiceLb {
            names,
            instance_group: &names.instance_group,
            scheme: SCHEME_INTERNAL,
            check_kind: "healthChecks",
            forwarding_rule: o.forwarding_rule.as_ref(),
            backend_service: o.backend_service.as_ref(),
            firewalls: fws.map(Option::is_some),
            zones: o.instance_groups.keys().map(String::as_str).collect(),
        },
    )
}

/// Tears the internal LB down (`mode`: everything, or only what cannot be the external LB's);
/// Ok once nothing of it is left (shared objects other LBs use are kept).
pub(crate) async fn cleanup_ilb(svc: &Service, ctx: &LbCtx, mode: Teardown) -> Result<(), SyncError> {
    let sh = &ctx.shared;
    let names = match names_of(svc, sh) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e, "cannot derive internal load balancer names; nothing to delete");
            return Ok(());
        }
    };
    let events = ServiceEvents {
        sh,
        oref: obj_ref(svc),
    };
    let _guard = ctx.shared_hc.lock().await;
    match delete_ilb_rounds(&RealGce::new(sh), &events, &names, mode).await {
        Ok(announced) => {
            if svc.metadata.deletion_timestamp.is_none() {
                patch_annotations(svc, sh, &IPV6_STATUS_ANNOTATION_KEYS, &BTreeMap::new()).await?;
            }
            if announced && mode == Teardown::All {
                deleted(svc, sh).await;
            }
            Ok(())
        }
        Err(f) => Err(sync_failed(svc, sh, None, None, f.error).await),
    }
}
