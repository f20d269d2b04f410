//! Which Services this controller serves, and the finalizers it keeps on them.
//!
//! Upstream decides in three places, all followed here: `EnsureLoadBalancer` ignores a foreign
//! `spec.loadBalancerClass` (providers/gce/gce_loadbalancer.go), `getSvcScheme` sends Internal
//! Services to the internal LB (`lb::internal`), and `shouldProcessNetLB` / `usesL4RBS`
//! (providers/gce/gce_util.go) leave Services of the regional-backend-service controllers alone:
//! the `cloud.google.com/l4-rbs: enabled` annotation, the NetLB v2/v3 finalizers, or a forwarding
//! rule that points at a backend service. A Service carrying upstream's own
//! `gke.networking.io/l4-netlb-v1` finalizer is served whatever else it carries (except a foreign
//! class), so LBs built by cloud-provider-gcp are adopted.

use k8s_openapi::api::core::v1::Service;

use crate::objects::ForwardingRule;

/// Finalizer the service controller puts on Services it built a load balancer for.
pub(crate) const LB_CLEANUP_FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";
/// Upstream's NetLBFinalizerV1 (providers/gce/gce_util.go): added by ensureExternalLoadBalancer,
/// removed at the end of ensureExternalLoadBalancerDeleted.
pub(crate) const NETLB_FINALIZER: &str = "gke.networking.io/l4-netlb-v1";
/// Upstream's ILBFinalizerV1 (gce_loadbalancer_internal.go): the Service may own internal LB
/// objects; added before the first of them is made, removed once the last is gone.
pub(crate) const ILB_FINALIZER: &str = "gke.networking.io/l4-ilb-v1";
/// Finalizers of an external load balancer of ours, in the order they are added.
pub(crate) const OUR_FINALIZERS: [&str; 2] = [LB_CLEANUP_FINALIZER, NETLB_FINALIZER];
/// Finalizers of an internal load balancer of ours, in the order they are added.
pub(crate) const OUR_ILB_FINALIZERS: [&str; 2] = [LB_CLEANUP_FINALIZER, ILB_FINALIZER];
/// Every finalizer this controller may have put on a Service.
pub(crate) const ALL_OUR_FINALIZERS: [&str; 3] = [LB_CLEANUP_FINALIZER, NETLB_FINALIZER, ILB_FINALIZER];
/// Upstream's LegacyRegionalInternalLoadBalancerClass: served like no class on internal Services.
pub(crate) const LEGACY_INTERNAL_LB_CLASS: &str = "networking.gke.io/l4-regional-internal-legacy";
/// Finalizers of the controllers that build backend-service load balancers: NetLB v2 (RBS) and v3
/// (NEG-based RBS) per gce_util.go's usesL4RBS, and ingress-gce's ILB subsetting finalizer
/// `gke.networking.io/l4-ilb-v2` (ILBFinalizerV2 in gce_loadbalancer_internal.go).
pub(crate) const FOREIGN_FINALIZERS: [&str; 3] = [
    RBS_FINALIZER,
    "gke.networking.io/l4-netlb-v3",
    "gke.networking.io/l4-ilb-v2",
];
/// ingress-gce's NetLBFinalizerV2: the Service may own an RBS NetLB with instance-group backends.
pub(crate) const RBS_FINALIZER: &str = "gke.networking.io/l4-netlb-v2";
/// ingress-gce's RegionalExternalLoadBalancerClass: the Service asks for an RBS NetLB.
pub(crate) const RBS_LB_CLASS: &str = "networking.gke.io/l4-regional-external";
/// Upstream's RBSAnnotationKey / RBSEnabled: the Service asks for the RBS-based NetLB.
pub(crate) const RBS_ANNOTATION: &str = "cloud.google.com/l4-rbs";
pub(crate) const RBS_ENABLED: &str = "enabled";
/// The only loadBalancerClass this controller serves besides none (upstream's legacy class).
pub(crate) const LEGACY_EXTERNAL_LB_CLASS: &str = "networking.gke.io/l4-regional-external-legacy";

/// What the controller does with a Service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// An external target-pool load balancer of ours.
    Ours,
    /// An internal passthrough load balancer of ours (`lb::internal`).
    Internal,
    /// A backend-service NetLB of ours (`lb::rbs`; only with `--rbs-netlb`).
    Rbs,
    /// Another controller's (upstream's ImplementedElsewhere): no GCE call, ever; our finalizers,
    /// should it carry them, are removed without deleting anything.
    Foreign(&'static str),
    /// Not (or no longer) type LoadBalancer: whatever we built is deleted.
    NotLoadBalancer,
}

/// The role with `--rbs-netlb` off (RBS Services are another controller's).
#[cfg(test)]
pub(crate) fn role(service: &Service) -> Role {
    role_for(service, false)
}

/// The role of `service`; `rbs`: this controller serves backend-service NetLBs
/// (`--rbs-netlb`), and then reads the NetLB v2 finalizer as its own.
pub(crate) fn role_for(service: &Service, rbs: bool) -> Role {
    if rbs && wants_rbs(service) {
        return Role::Rbs;
    }
    let is_lb = service
        .spec
        .as_ref()
        .is_some_and(|s| s.type_.as_deref() == Some("LoadBalancer"));
    if rbs && !is_lb && has_finalizer(service, RBS_FINALIZER) {
        return Role::NotLoadBalancer;
    }
    if let Some(reason) = foreign_reason(service, rbs) {
        return Role::Foreign(reason);
    }
    match (is_lb, crate::lb::internal::is_internal(service)) {
        (true, true) => Role::Internal,
        (true, false) => Role::Ours,
        _ => Role::NotLoadBalancer,
    }
}

#[cfg(test)]
/// Whether this controller builds an external target-pool LB for the Service.
pub(crate) fn wants_load_balancer(service: &Service) -> bool {
    role(service) == Role::Ours
}

pub(crate) fn has_finalizer(service: &Service, name: &str) -> bool {
    service
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == name))
}

/// Whether the Service carries at least one of [`ALL_OUR_FINALIZERS`] (or, with `rbs`, the NetLB
/// v2 one): then it may own GCE objects.
pub(crate) fn has_any_of_ours(service: &Service, rbs: bool) -> bool {
    ALL_OUR_FINALIZERS.iter().any(|f| has_finalizer(service, f))
        || (rbs && has_finalizer(service, RBS_FINALIZER))
}

/// The finalizer list with `add` added and `remove` removed, every other entry in place; None
/// when nothing changes.
pub(crate) fn finalizers_with(service: &Service, add: &[&str], remove: &[&str]) -> Option<Vec<String>> {
    let current = service.metadata.finalizers.clone().unwrap_or_default();
    let mut next: Vec<String> = current
        .iter()
        .filter(|x| !remove.contains(&x.as_str()))
        .cloned()
        .collect();
    for f in add {
        if !next.iter().any(|x| x == f) {
            next.push((*f).to_owned());
        }
    }
    (next != current).then_some(next)
}

/// The finalizer list with ours added (`add`) or removed, keeping every other entry in place;
/// None when nothing changes.
pub(crate) fn finalizers_with_ours(service: &Service, add: bool) -> Option<Vec<String>> {
    let current = service.metadata.finalizers.clone().unwrap_or_default();
    let next: Vec<String> = if add {
        let mut next = current.clone();
        for f in OUR_FINALIZERS {
            if !next.iter().any(|x| x == f) {
                next.push(f.to_owned());
            }
        }
        next
    } else {
        current
            .iter()
            .filter(|x| !ALL_OUR_FINALIZERS.contains(&x.as_str()))
            .cloned()
            .collect()
    };
    (next != current).then_some(next)
}

/// Whether the Service asks for a backend-service (RBS) network load balancer, as ingress-gce's
/// WantsL4NetLB and isRBSBasedService read it from the Service: type LoadBalancer and either the
/// class `networking.gke.io/l4-regional-external` (a class wins over the Internal annotation,
/// as there) or, without a class and not Internal, `cloud.google.com/l4-rbs: enabled` (exact
/// value). Neither: a target pool, as cloud-provider-gcp builds (ingress-gce's
/// `--enable-l4-netlb-rbs-by-default` is off by default too). The NetLB v2 finalizer is not an
/// input here: svcnet reads it as "may own RBS objects", so removing the annotation switches the
/// Service back to a target pool (ingress-gce keeps such a Service on RBS).
pub(crate) fn wants_rbs(service: &Service) -> bool {
    let Some(spec) = service.spec.as_ref() else {
        return false;
    };
    if spec.type_.as_deref() != Some("LoadBalancer") {
        return false;
    }
    if let Some(class) = spec.load_balancer_class.as_deref() {
        return class == RBS_LB_CLASS;
    }
    !crate::lb::internal::is_internal(service)
        && service
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(RBS_ANNOTATION))
            .is_some_and(|v| v == RBS_ENABLED)
}

/// A forwarding rule named like our LB that points at a backend service belongs to a
/// backend-service load balancer (usesL4RBS's last check): never planned over, never deleted.
/// An INTERNAL one is our own internal LB's (the Service was internal before).
pub(crate) fn forwarding_rule_is_foreign(rule: Option<&ForwardingRule>) -> bool {
    rule.is_some_and(|r| {
        !r.backend_service.is_empty() && r.load_balancing_scheme != crate::objects::SCHEME_INTERNAL
    })
}

/// `rbs`: RBS Services were taken by [`role_for`] already, and the NetLB v2 finalizer is ours.
fn foreign_reason(service: &Service, rbs: bool) -> Option<&'static str> {
    let class = service
        .spec
        .as_ref()
        .and_then(|s| s.load_balancer_class.as_deref());
    let annotations = service.metadata.annotations.as_ref();
    let annotation = |key: &str| annotations.and_then(|a| a.get(key));
    if crate::lb::internal::is_internal(service) {
        // Upstream ensureInternalLoadBalancer: a foreign class, or ILB subsetting's v2 finalizer
        // on a Service without ours, is another controller's.
        if class.is_some_and(|c| c != LEGACY_INTERNAL_LB_CLASS) {
            return Some("loadBalancerClass of another controller");
        }
        if !has_finalizer(service, ILB_FINALIZER) && has_finalizer(service, "gke.networking.io/l4-ilb-v2") {
            return Some("finalizer of a backend-service load balancer controller");
        }
        return None;
    }
    if class.is_some_and(|c| c != LEGACY_EXTERNAL_LB_CLASS) {
        return Some("loadBalancerClass of another controller");
    }
    // The legacy class, or upstream's finalizer, settles it before the RBS markers (shouldProcessNetLB).
    if class.is_some() || has_finalizer(service, NETLB_FINALIZER) {
        return None;
    }
    // Upstream compares the annotation value exactly.
    if !rbs && annotation(RBS_ANNOTATION).is_some_and(|v| v == RBS_ENABLED) {
        return Some("cloud.google.com/l4-rbs: enabled");
    }
    let foreign = |f: &&str| !(rbs && *f == RBS_FINALIZER) && has_finalizer(service, f);
    if FOREIGN_FINALIZERS.iter().any(foreign) {
        return Some("finalizer of a backend-service load balancer controller");
    }
    None
}
