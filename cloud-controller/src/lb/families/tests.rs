use super::*;
use crate::lb::internal::IlbSpec;
use crate::objects::observed::Observed;
use crate::testutil::Scenario;

#[test]
fn families_default_to_ipv4() {
    let s = Scenario::new();
    assert_eq!(families(&s.service), Families { v4: true, v6: false });
    let s = Scenario::new().ip_families(&[]);
    assert_eq!(families(&s.service), Families { v4: true, v6: false });
    let s = Scenario::new().ip_families(&[IPV6, IPV4]);
    assert_eq!(families(&s.service), Families { v4: true, v6: true });
    let s = Scenario::new().ip_families(&[IPV6]);
    assert_eq!(families(&s.service), Families { v4: false, v6: true });
}

#[test]
fn ipv6_only_is_refused_by_target_pool_and_internal_lbs_dual_stack_is_served() {
    let v6 = Scenario::new().ip_families(&[IPV6]);
    let Err(err) = v6.ensure(&Observed::default()) else {
        panic!("IPv6-only target pool accepted")
    };
    assert_eq!(err.field(), "spec.ipFamilies");
    assert_eq!(err.metric_label(), "ipv6_unsupported");
    let msg = err.to_string();
    assert!(
        msg.starts_with("Service ") && msg.contains("target-pool") && msg.contains("IPv6-only"),
        "{msg}"
    );

    let ilb = Scenario::new()
        .ip_families(&[IPV6])
        .annotation("networking.gke.io/load-balancer-type", "Internal");
    let Err(err) = IlbSpec::from_service(&ilb.service) else {
        panic!("IPv6-only ILB accepted")
    };
    assert!(err.to_string().contains("internal load balancer"), "{err}");

    let dual = Scenario::new().ip_families(&[IPV6, IPV4]);
    let plan = dual
        .ensure(&Observed::default())
        .expect("dual stack builds the IPv4 LB");
    assert!(!plan.actions.is_empty());
    assert!(require_ipv4(&dual.service, "Service default/x", "a backend-service network").is_ok());
}
