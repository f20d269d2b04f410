//! External (target pool) load balancers in the service controller: their rounds
//! (`rounds::external`, through the driver internal LBs use too), then status, events and record.
//!
//! Never imports: crate::controllers::lb::internal, crate::controllers::lb::rounds::internal.

use k8s_openapi::api::core::v1::Service;
use kube::runtime::controller::Action as Requeue;

use crate::controllers::SyncError;
use crate::controllers::lb::ctx::LbCtx;
use crate::controllers::lb::record;
use crate::controllers::lb::report::{
    ServiceEvents, converged, deleted, invalid_service, obj_ref, patch_ingress, sync_failed,
};
use crate::controllers::lb::rounds::RealGce;
use crate::controllers::lb::rounds::external::{EnsureInput, Ensured, delete_rounds, ensure_rounds};
use crate::lb::external::ensure::lb_names;
use crate::lb::{self, spec::service_object};
use crate::naming::LbNames;

/// Builds or repairs the external LB; then status, events and record.
pub(crate) async fn ensure_lb(svc: &Service, ctx: &LbCtx) -> Result<Requeue, SyncError> {
    let sh = &ctx.shared;
    let names = match lb_names(svc, &sh.cfg) {
        Ok(n) => n,
        Err(e) => return Ok(invalid_service(svc, sh, &e).await),
    };
    let events = ServiceEvents {
        sh,
        oref: obj_ref(svc),
    };
    let input = EnsureInput {
        svc,
        names: &names,
        cfg: &sh.cfg,
        fresh: ctx.take_fresh(svc),
        nodes: &|| sh.node_list(),
    };
    let gce = RealGce::new(sh);
    let (plan, obs, announced) = match ensure_rounds(&gce, &events, &ctx.shared_hc, input).await {
        Ok(Ensured::Converged { plan, obs, announced }) => (plan, obs, announced),
        Ok(Ensured::Invalid(e)) => return Ok(invalid_service(svc, sh, &e).await),
        Ok(Ensured::ImplementedElsewhere) => {
            tracing::info!(
                "forwarding rule points at a backend service: another controller's load balancer, left alone"
            );
            return Ok(Requeue::await_change());
        }
        Err(f) => return Err(sync_failed(svc, sh, Some(&names), f.obs.as_ref(), f.error).await),
    };
    let ip = plan.ingress_ip.clone();
    let done = announced.map(|membership_only| match membership_only {
        true => (lb::EVENT_UPDATED, "Updated load balancer with new hosts"),
        false => (lb::EVENT_ENSURED, "Ensured load balancer"),
    });
    converged(svc, sh, ip.as_deref(), done).await?;
    let prev = record::current(&sh.client, svc).await;
    let st = record::build_status(svc, prev.as_ref(), Some(&names), Some(&*obs), ip.as_deref(), None);
    record::write(&sh.client, svc, st).await;
    Ok(Requeue::requeue(sh.tuning.lb_resync))
}

/// Tears the external LB down; Ok once nothing of it is left in GCE. `switching`: the Service
/// turned internal; a forwarding rule or address of the internal kind (same names) is left to
/// it, and status and record stay for the internal LB.
pub(crate) async fn cleanup(svc: &Service, ctx: &LbCtx, switching: bool) -> Result<(), SyncError> {
    let sh = &ctx.shared;
    // Names come from the UID alone: a Service whose spec became invalid (bad annotation, no
    // ports) must still get its load balancer removed.
    let uid = svc.metadata.uid.clone().unwrap_or_default();
    let names = match LbNames::new(&uid, &sh.cfg.cluster_id, &service_object(svc)) {
        Ok(n) => n,
        Err(e) => {
            // No valid name can be derived (e.g. no uid): nothing of ours can exist under it.
            tracing::warn!(error = %e, "cannot derive load balancer names; nothing to delete");
            return Ok(());
        }
    };
    ctx.take_fresh(svc);
    let events = ServiceEvents {
        sh,
        oref: obj_ref(svc),
    };
    let gce = RealGce::new(sh);
    let announced = match delete_rounds(&gce, &events, &ctx.shared_hc, &names, switching).await {
        Ok(a) => a,
        Err(f) => return Err(sync_failed(svc, sh, Some(&names), f.obs.as_ref(), f.error).await),
    };
    if !switching && svc.metadata.deletion_timestamp.is_none() {
        patch_ingress(svc, sh, None).await?;
    }
    if announced {
        deleted(svc, sh).await;
    }
    if !switching {
        record::delete(&ctx.shared.client, svc).await;
    }
    Ok(())
}
