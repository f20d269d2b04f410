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
fn ipv6_only_is_refused_by_target_pools_and_accepted_by_internal_lbs_dual_stack_is_served() {
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
    let spec = IlbSpec::from_service(&ilb.service).expect("IPv6-only ILB accepted");
    assert!(spec.base.ipv6 && !spec.base.ipv4);

    let dual = Scenario::new().ip_families(&[IPV6, IPV4]);
    let plan = dual
        .ensure(&Observed::default())
        .expect("dual stack builds the IPv4 LB");
    assert!(!plan.actions.is_empty());
    assert!(require_ipv4(&dual.service, "Service default/x", "a backend-service network").is_ok());
}

#[test]
fn gce_refusing_an_ipv6_address_for_its_subnetwork_becomes_ingress_gces_user_error() {
    assert!(is_missing_ipv6_range(
        Some(400),
        "Invalid value for field 'resource.subnetwork': 'x': The subnetwork does not have an EXTERNAL IPv6 range (ipv6AccessType EXTERNAL)."
    ));
    assert!(is_missing_ipv6_range(
        Some(400),
        "The referenced subnetwork resource cannot be found."
    ));
    assert!(!is_missing_ipv6_range(
        Some(400),
        "Invalid value for field 'resource.name'"
    ));
    assert!(!is_missing_ipv6_range(
        Some(503),
        "The subnetwork does not have an EXTERNAL IPv6 range"
    ));
    assert!(is_missing_ipv6_range(
        Some(400),
        "Invalid value for field 'resource.subnetwork': 'x': The subnetwork does not have an INTERNAL IPv6 range (ipv6AccessType INTERNAL)."
    ));
    let err = no_internal_ipv6_range("Service default/web", "sub-a");
    assert_eq!(err.field(), "spec.ipFamilies");
    let msg = err.to_string();
    assert!(
        msg.starts_with(
            "Service default/web: spec.ipFamilies: subnet sub-a does not have internal IPv6 ranges"
        ) && msg.contains("networking.gke.io/internal-load-balancer-subnet"),
        "{msg}"
    );
    let err = no_external_ipv6_range("Service default/web", "sub-a");
    let msg = err.to_string();
    assert!(
        msg.starts_with("Service default/web: subnet sub-a does not have external IPv6 ranges"),
        "{msg}"
    );
    assert_eq!(err.metric_label(), "no_external_ipv6_range");
    assert_eq!(err.field(), "spec.ipFamilies");
}

#[test]
fn ingress_ips_follow_spec_ip_families_order() {
    let (v4, v6) = (Some("203.0.113.7"), Some("2600:1900:4000:1::"));
    let dual6 = Scenario::new().ip_families(&[IPV6, IPV4]);
    assert_eq!(
        ordered_ingress_ips(&dual6.service, v4, v6),
        ["2600:1900:4000:1::", "203.0.113.7"]
    );
    let dual4 = Scenario::new().ip_families(&[IPV4, IPV6]);
    assert_eq!(
        ordered_ingress_ips(&dual4.service, v4, v6),
        ["203.0.113.7", "2600:1900:4000:1::"]
    );
    // A family the Service no longer asks for is not reported even if its IP is still known.
    let only4 = Scenario::new().ip_families(&[IPV4]);
    assert_eq!(ordered_ingress_ips(&only4.service, v4, v6), ["203.0.113.7"]);
    let only6 = Scenario::new().ip_families(&[IPV6]);
    assert_eq!(
        ordered_ingress_ips(&only6.service, v4, v6),
        ["2600:1900:4000:1::"]
    );
    // Before the IPv6 rule exists only the IPv4 IP is reported.
    assert_eq!(ordered_ingress_ips(&dual6.service, v4, None), ["203.0.113.7"]);
    let none = Scenario::new();
    assert_eq!(ordered_ingress_ips(&none.service, v4, v6), ["203.0.113.7"]);
}
