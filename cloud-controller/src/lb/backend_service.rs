//! What both backend-service kinds (internal LBs and RBS NetLBs) plan alike: the plan they return
//! ([`BackendServicePlan`]) and the backend service step: create it, or update it toward what we
//! want keeping GCE's fingerprint, and tell which health check it used before, which the caller
//! deletes once nothing points at it.

use crate::objects::action::Action;
use crate::objects::{self, BackendService};

/// A backend-service LB's ensure plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BackendServicePlan {
    pub actions: Vec<Action>,
    /// The plan ends with reserving an address whose IP GCE picks: execute, observe, plan again.
    pub replan: bool,
    pub ingress_ip: Option<String>,
    /// The IPv6 rule's address (bare) of a dual-stack or IPv6-only LB.
    pub ingress_ipv6: Option<String>,
}

/// Pushes the create or update of `want` (none when `equal` says GCE's copy is ours already) and
/// returns the name of the health check `have` pointed at.
pub(crate) fn plan_backend_service(
    want: &BackendService,
    have: Option<&BackendService>,
    equal: fn(&BackendService, &BackendService) -> bool,
    actions: &mut Vec<Action>,
) -> Option<String> {
    let old_hc = have
        .and_then(|bs| bs.health_checks.first())
        .map(|l| objects::link_name(l).to_owned());
    match have {
        None => actions.push(Action::CreateBackendService(want.clone())),
        Some(have) if !equal(have, want) => actions.push(Action::UpdateBackendService(BackendService {
            fingerprint: have.fingerprint.clone(),
            ..want.clone()
        })),
        Some(_) => {}
    }
    old_hc
}
