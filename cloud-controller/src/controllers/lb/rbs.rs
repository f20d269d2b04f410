//! Backend-service (RBS) NetLBs in the service controller (`--rbs-netlb`): their rounds
//! (`rounds::rbs`, through the driver the other kinds use), then the ingress IP, the status
//! annotations ingress-gce writes, events and record. The whole sync holds the shared-resource
//! lock: RBS NetLBs share the instance groups with the internal LBs and the regional health
//! check among themselves, which a teardown may delete.
//!
//! Never imports: crate::controllers::lb::external, crate::controllers::lb::rounds::external, crate::controllers::lb::internal, crate::controllers::lb::rounds::internal.

use k8s_openapi::api::core::v1::Service;
use kube::runtime::controller::Action as Requeue;
use serde_json::Value;
use svcnet_crds::GceResources;

use crate::controllers::lb::ctx::LbCtx;
use crate::controllers::lb::record;
use crate::controllers::lb::report::{
    ServiceEvents, converged_ips, deleted, invalid_service, obj_ref, patch_annotations, patch_ingress,
    sync_failed,
};
use crate::controllers::lb::rounds::rbs::{RbsEnsured, RbsInput, delete_rbs_rounds, ensure_rbs_rounds};
use crate::controllers::lb::rounds::{RbsObservation, RealGce};
use crate::controllers::{Shared, SyncError};
use crate::lb::families::{is_missing_ipv6_range, no_external_ipv6_range, ordered_ingress_ips};
use crate::lb::rbs::STATUS_ANNOTATION_KEYS;
use crate::lb::rbs::status::status_annotations;
use crate::lb::spec::{LbSpec, service_object};
use crate::naming::l4::{L4Namer, RbsNames};
use crate::objects::{SCHEME_EXTERNAL, TIER_STANDARD};

/// The names of the Service's RBS objects; they hash the kube-system UID read at start.
fn names_of(svc: &Service, sh: &Shared) -> crate::Result<RbsNames> {
    let object = service_object(svc);
    let Some(kube_system_uid) = sh.cfg.rbs_netlb.as_deref() else {
        return Err(crate::Error::MissingField {
            object,
            field: "kube-system namespace UID (--rbs-netlb)".into(),
        });
    };
    let m = &svc.metadata;
    let (ns, name) = (
        m.namespace.as_deref().unwrap_or(""),
        m.name.as_deref().unwrap_or(""),
    );
    let uid = m.uid.as_deref().unwrap_or("");
    RbsNames::new(
        &L4Namer::new(kube_system_uid),
        &sh.cfg.cluster_id,
        (ns, name, uid),
        &object,
    )
}

/// Builds or repairs the RBS NetLB; Ok(requeue) with status, annotations and record written.
pub(crate) async fn ensure_rbs(svc: &Service, ctx: &LbCtx) -> Result<Requeue, SyncError> {
    let sh = &ctx.shared;
    let checked = names_of(svc, sh).and_then(|n| {
        let spec = LbSpec::from_service_mixed(svc)?;
        // ingress-gce forwarding_rules_ipv6.go: no IPv6 NetLB on Standard tier.
        if spec.ipv6 && spec.network_tier == TIER_STANDARD {
            return Err(crate::Error::Ipv6StandardTier {
                object: spec.object.clone(),
            });
        }
        Ok((n, spec))
    });
    let (names, spec) = match checked {
        Ok(x) => x,
        Err(e) => return Ok(invalid_service(svc, sh, &e).await),
    };
    let events = ServiceEvents {
        sh,
        oref: obj_ref(svc),
    };
    let input = RbsInput {
        spec: &spec,
        names: &names,
        cfg: &sh.cfg,
        nodes: &|| sh.node_list(),
    };
    let _guard = ctx.shared_hc.lock().await;
    let (plan, desired, obs, announced) = match ensure_rbs_rounds(&RealGce::new(sh), &events, input).await {
        Ok(RbsEnsured::Converged {
            plan,
            desired,
            obs,
            announced,
        }) => (plan, desired, obs, announced),
        Ok(RbsEnsured::Invalid(e)) => return Ok(invalid_service(svc, sh, &e).await),
        Err(f) => {
            let e = explain_ipv6_subnet(f.error, &spec, &sh.cfg);
            return Err(sync_failed(svc, sh, None, None, e).await);
        }
    };
    let ip = plan.ingress_ip.clone();
    let ips = ordered_ingress_ips(svc, ip.as_deref(), plan.ingress_ipv6.as_deref());
    let want = status_annotations(&desired)
        .into_iter()
        .map(|(k, v)| (k, Some(v)))
        .collect();
    patch_annotations(svc, sh, &STATUS_ANNOTATION_KEYS, &want).await?;
    let done = announced.then_some((crate::lb::EVENT_ENSURED, "Ensured load balancer"));
    converged_ips(svc, sh, &ips, done).await?;
    let prev = record::current(&sh.client, svc).await;
    let mut st = record::build_status(svc, prev.as_ref(), None, None, None, None);
    st.ingress_ip = ips.into_iter().next();
    st.gce = Some(gce_resources(&names, &obs));
    record::write(&sh.client, svc, st).await;
    Ok(Requeue::requeue(sh.tuning.lb_resync))
}

/// GCE's refusal of the IPv6 address for its subnetwork becomes ingress-gce's user error, naming
/// the Service, `spec.ipFamilies` and the subnetwork (GCE's error after it).
fn explain_ipv6_subnet(e: SyncError, spec: &LbSpec, cfg: &crate::config::Config) -> SyncError {
    match e {
        SyncError::Gce(g) if spec.ipv6 && is_missing_ipv6_range(g.status, &g.message) => {
            let subnet = spec.subnet.as_deref().unwrap_or(&cfg.subnetwork);
            SyncError::Explained {
                hint: no_external_ipv6_range(&spec.object, subnet).to_string(),
                source: g,
            }
        }
        e => e,
    }
}

/// The CloudLoadBalancer record's view of an RBS NetLB.
fn gce_resources(names: &RbsNames, (o, links): &RbsObservation) -> GceResources {
    let fws = [
        &o.nodes_firewall,
        &o.shared_health_check_firewall,
        &o.local_health_check_firewall,
    ];
    record::backend_service_resources(
        links,
        record::BackendServiceLb {
            names,
            instance_group: &names.instance_group,
            scheme: SCHEME_EXTERNAL,
            check_kind: "regionHealthChecks",
            forwarding_rule: o.forwarding_rule.as_ref(),
            backend_service: o.backend_service.as_ref(),
            firewalls: fws.map(Option::is_some),
            zones: o.instance_groups.keys().map(String::as_str).collect(),
        },
    )
}

/// Tears the RBS NetLB down; Ok once nothing of it is left (shared objects other LBs use are
/// kept). The status annotations go with the finalizer, in one patch ([`without_status_annotations`]).
/// `switching`: the Service turned into another kind, whose sync writes the ingress status and
/// record next; otherwise both are cleared.
pub(crate) async fn cleanup_rbs(svc: &Service, ctx: &LbCtx, switching: bool) -> Result<(), SyncError> {
    let sh = &ctx.shared;
    let names = match names_of(svc, sh) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e, "cannot derive backend-service load balancer names; nothing to delete");
            return Ok(());
        }
    };
    let events = ServiceEvents {
        sh,
        oref: obj_ref(svc),
    };
    let guard = ctx.shared_hc.lock().await;
    let announced = match delete_rbs_rounds(&RealGce::new(sh), &events, &names, &sh.cfg, !switching).await {
        Ok(a) => a,
        Err(f) => return Err(sync_failed(svc, sh, None, None, f.error).await),
    };
    drop(guard);
    if !switching {
        if svc.metadata.deletion_timestamp.is_none() {
            patch_ingress(svc, sh, None).await?;
        }
        if announced {
            deleted(svc, sh).await;
        }
        record::delete(&sh.client, svc).await;
    }
    Ok(())
}

/// A merge patch's `metadata.annotations` removing every status annotation the Service carries
/// (None when it carries none).
pub(crate) fn without_status_annotations(svc: &Service) -> Option<Value> {
    let current = svc.metadata.annotations.as_ref()?;
    let gone: serde_json::Map<String, Value> = STATUS_ANNOTATION_KEYS
        .iter()
        .filter(|k| current.contains_key(**k))
        .map(|k| ((*k).to_owned(), Value::Null))
        .collect();
    (!gone.is_empty()).then_some(Value::Object(gone))
}
