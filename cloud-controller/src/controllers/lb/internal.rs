//! Internal load balancers in the service controller: observe -> `lb::internal` plan -> execute,
//! round after round until the plan is empty, as for external ones (`service_lb`). The whole
//! sync holds the shared-resource lock: internal LBs share the instance groups and the node
//! health check, which a teardown may delete.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Service;
use svcnet_crds::{GceResourceRef, GceResources};

use crate::controllers::lb::ctx::LbCtx;
use crate::controllers::lb::record;
use crate::controllers::lb::report::{invalid_service, obj_ref, patch_ingress, sync_failed};
use crate::controllers::{Shared, SyncError, key};
use crate::gce::error::GceError;
use crate::gce::exec::execute;
use crate::gce::observe::ObservedLb;
use crate::gce::observe_ilb::observe_ilb;
use crate::gce::outcome::Outcome;
use crate::lb::hosts::lb_hosts;
use crate::lb::internal::delete::{Teardown, plan_delete};
use crate::lb::internal::plan::plan_ensure;
use crate::lb::internal::{self, IlbSpec};
use crate::lb::stages::stages;
use crate::naming::IlbNames;
use crate::objects::action::Action;
use crate::objects::observed::IlbObserved;

const MAX_ROUNDS: usize = 6;

/// Executes a plan stage by stage; a delete GCE refused as in use (shared objects) is recorded in
/// `kept` and ends the plan (the rest assumed it gone): the caller re-plans.
async fn execute_plan(sh: &Shared, actions: &[Action], kept: &mut BTreeSet<String>) -> Result<(), GceError> {
    for stage in stages(actions) {
        let calls = stage.iter().map(|a| execute(&sh.gce, &sh.tuning.retry, a));
        let results = futures::future::join_all(calls).await;
        let mut stop = false;
        for (action, result) in stage.iter().zip(results) {
            if result? == Outcome::KeptInUse {
                kept.insert(action.target_key());
                stop = true;
            }
        }
        if stop {
            return Ok(());
        }
    }
    Ok(())
}

fn want_ip(svc: &Service) -> Option<String> {
    svc.spec
        .as_ref()
        .and_then(|s| s.load_balancer_ip.clone())
        .filter(|ip| !ip.is_empty())
}

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
    let _guard = ctx.shared_hc.lock().await;
    let mut kept = BTreeSet::new();
    let mut announced = false;
    let mut done = None;
    for _ in 0..MAX_ROUNDS {
        let nodes = sh.node_list();
        let (hosts, skipped) = lb_hosts(&nodes);
        if hosts.is_empty() {
            let e = crate::Error::NoEligibleNodes {
                object: spec.base.object.clone(),
            };
            return Ok(invalid_service(svc, sh, &e).await);
        }
        let (mut o, links) =
            match observe_ilb(&sh.gce, &sh.tuning.retry, &names, want_ip(svc).as_deref()).await {
                Ok(x) => x,
                Err(e) => return Err(sync_failed(svc, sh, None, None, e.into()).await),
            };
        o.kept_in_use = kept.clone();
        let desired = internal::desired(&spec, &names, &hosts, &sh.cfg);
        let plan = plan_ensure(&desired, &o, &sh.cfg);
        if plan.actions.is_empty() && !plan.replan {
            done = Some((plan, o, links));
            break;
        }
        if !announced {
            sh.event(
                &oref,
                false,
                crate::lb::EVENT_ENSURING,
                "Ensuring load balancer".into(),
            )
            .await;
            announced = true;
        }
        if !skipped.is_empty() {
            tracing::info!(service = %key(svc), nodes = ?skipped, "nodes without providerID are not in the instance groups yet");
        }
        if let Err(e) = execute_plan(sh, &plan.actions, &mut kept).await {
            return Err(sync_failed(svc, sh, None, None, e.into()).await);
        }
    }
    let Some((plan, o, links)) = done else {
        let e = SyncError::NotConverged(format!("internal load balancer {} did not converge", names.lb));
        return Err(sync_failed(svc, sh, None, None, e).await);
    };
    let ip = plan.ingress_ip.clone();
    let status_changed = match &ip {
        Some(ip) => patch_ingress(svc, sh, Some(ip)).await?,
        None => false,
    };
    if announced || status_changed {
        sh.event(
            &oref,
            false,
            crate::lb::EVENT_ENSURED,
            "Ensured load balancer".into(),
        )
        .await;
    }
    let prev = record::current(&sh.client, svc).await;
    let mut st = record::build_status(svc, prev.as_ref(), None, None, None, None);
    st.ingress_ip = ip;
    st.gce = Some(record(&names, &o, &links));
    record::write(&sh.client, svc, st).await;
    Ok(kube::runtime::controller::Action::requeue(sh.tuning.lb_resync))
}

/// The CloudLoadBalancer record's view of an internal LB: scheme, rule, backend service,
/// firewalls, the health check its backend service uses, and the instance groups.
fn record(names: &IlbNames, o: &IlbObserved, links: &ObservedLb) -> GceResources {
    let fws = [
        &o.firewall,
        &o.nodes_health_check_firewall,
        &o.local_health_check_firewall,
    ];
    let backend_checks = o.backend_service.as_ref().map(|b| b.health_checks.as_slice());
    let (firewalls, health_checks) = record::guards(
        links,
        names,
        fws.map(Option::is_some),
        backend_checks,
        "healthChecks",
    );
    GceResources {
        address: None,
        forwarding_rule: o
            .forwarding_rule
            .as_ref()
            .map(|f| record::resource_ref(links, "forwardingRules", &f.name)),
        target_pool: None,
        firewalls,
        health_checks,
        load_balancing_scheme: Some(internal::SCHEME_INTERNAL.to_owned()),
        backend_service: o
            .backend_service
            .as_ref()
            .map(|b| record::resource_ref(links, "backendServices", &b.name)),
        instance_groups: o
            .instance_groups
            .keys()
            .map(|zone| GceResourceRef {
                name: names.instance_group.clone(),
                self_link: links.link("instanceGroups", &format!("{zone}/{}", names.instance_group)),
            })
            .collect(),
    }
}

/// Tears the internal LB down (`mode`: everything, or only what cannot be the external LB's);
/// Ok once nothing of it is left (shared objects other LBs use are kept).
pub(crate) async fn cleanup_ilb(svc: &Service, ctx: &LbCtx, mode: Teardown) -> Result<(), SyncError> {
    let sh = &ctx.shared;
    let names = match names_of(svc, sh) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(service = %key(svc), error = %e, "cannot derive internal load balancer names; nothing to delete");
            return Ok(());
        }
    };
    let _guard = ctx.shared_hc.lock().await;
    let mut kept = BTreeSet::new();
    let mut announced = false;
    for _ in 0..MAX_ROUNDS {
        let (mut o, _) = match observe_ilb(&sh.gce, &sh.tuning.retry, &names, None).await {
            Ok(x) => x,
            Err(e) => return Err(sync_failed(svc, sh, None, None, e.into()).await),
        };
        o.kept_in_use = kept.clone();
        let actions = plan_delete(&names, &o, mode);
        if actions.is_empty() {
            if announced && mode == Teardown::All {
                sh.event(
                    &obj_ref(svc),
                    false,
                    crate::lb::EVENT_DELETED,
                    "Deleted load balancer".into(),
                )
                .await;
            }
            return Ok(());
        }
        if !announced && mode == Teardown::All {
            sh.event(
                &obj_ref(svc),
                false,
                crate::lb::EVENT_DELETING,
                "Deleting load balancer".into(),
            )
            .await;
        }
        announced = true;
        if let Err(e) = execute_plan(sh, &actions, &mut kept).await {
            return Err(sync_failed(svc, sh, None, None, e.into()).await);
        }
    }
    let e = SyncError::NotConverged(format!("internal load balancer {} not fully deleted", names.lb));
    Err(sync_failed(svc, sh, None, None, e).await)
}
