use super::*;
use k8s_openapi::api::core::v1::ServiceSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;

fn svc(type_: &str) -> Service {
    Service {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some("hostnames".into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some(type_.into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn with_etp(mut s: Service, etp: &str) -> Service {
    if let Some(spec) = s.spec.as_mut() {
        spec.external_traffic_policy = Some(etp.into());
    }
    s
}

fn with_annotation(mut s: Service, value: &str) -> Service {
    s.metadata.annotations = Some(BTreeMap::from([(
        LB_SOURCE_RANGES_ANNOTATION.to_string(),
        value.to_string(),
    )]));
    s
}

fn with_spec_ranges(mut s: Service, ranges: &[&str]) -> Service {
    if let Some(spec) = s.spec.as_mut() {
        spec.load_balancer_source_ranges = Some(ranges.iter().map(|r| r.to_string()).collect());
    }
    s
}

fn nets(list: &[&str]) -> Vec<IpNet> {
    list.iter().map(|n| n.parse().expect("test CIDR")).collect()
}

#[test]
fn constants_match_upstream() {
    assert_eq!(HEALTHZ_PORT, 10256);
    assert_eq!(HEALTHZ_PATH, "/healthz");
}

#[test]
fn key_is_namespace_slash_name() {
    assert_eq!(service_key(&svc("ClusterIP")), "default/hostnames");
}

#[test]
fn load_balancer_type() {
    assert!(is_load_balancer(&svc("LoadBalancer")));
    assert!(!is_load_balancer(&svc("NodePort")));
    assert!(!is_load_balancer(&Service::default()));
}

#[test]
fn external_policy_local_only_for_external_types() {
    assert!(external_policy_local(&with_etp(svc("LoadBalancer"), "Local")));
    assert!(external_policy_local(&with_etp(svc("NodePort"), "Local")));
    assert!(!external_policy_local(&with_etp(svc("LoadBalancer"), "Cluster")));
    // A plain ClusterIP service ignores the field...
    assert!(!external_policy_local(&with_etp(svc("ClusterIP"), "Local")));
    // ...unless it has externalIPs (upstream's ExternallyAccessible).
    let mut with_ips = with_etp(svc("ClusterIP"), "Local");
    if let Some(spec) = with_ips.spec.as_mut() {
        spec.external_ips = Some(vec!["192.0.2.7".into()]);
    }
    assert!(external_policy_local(&with_ips));
    assert!(!external_policy_local(&with_etp(svc("ExternalName"), "Local")));
}

#[test]
fn internal_policy_local_reads_the_field() {
    let mut s = svc("ClusterIP");
    assert!(!internal_policy_local(&s));
    if let Some(spec) = s.spec.as_mut() {
        spec.internal_traffic_policy = Some("Local".into());
    }
    assert!(internal_policy_local(&s));
    if let Some(spec) = s.spec.as_mut() {
        spec.internal_traffic_policy = Some("Cluster".into());
    }
    assert!(!internal_policy_local(&s));
}

#[test]
fn no_ranges_means_empty() {
    assert_eq!(load_balancer_source_ranges(&svc("LoadBalancer")), Ok(vec![]));
    assert_eq!(
        load_balancer_source_ranges(&with_annotation(svc("LoadBalancer"), "  ")),
        Ok(vec![])
    );
}

#[test]
fn annotation_is_split_and_trimmed() {
    let s = with_annotation(svc("LoadBalancer"), " 192.0.2.0/24 , 2001:db8::/32,10.0.0.1/8");
    assert_eq!(
        load_balancer_source_ranges(&s),
        Ok(nets(&["192.0.2.0/24", "2001:db8::/32", "10.0.0.0/8"]))
    );
}

#[test]
fn spec_wins_over_annotation() {
    let s = with_spec_ranges(
        with_annotation(svc("LoadBalancer"), "198.51.100.0/24"),
        &[" 203.0.113.0/25"],
    );
    assert_eq!(load_balancer_source_ranges(&s), Ok(nets(&["203.0.113.0/25"])));
    // An empty spec list does not hide the annotation.
    let s = with_spec_ranges(with_annotation(svc("LoadBalancer"), "198.51.100.0/24"), &[]);
    assert_eq!(load_balancer_source_ranges(&s), Ok(nets(&["198.51.100.0/24"])));
}

#[test]
fn errors_name_service_field_and_value() {
    let s = with_spec_ranges(svc("LoadBalancer"), &["10.0.0.0/8", " 1.2.3.4 "]);
    let err = load_balancer_source_ranges(&s).expect_err("plain IP is not a CIDR");
    assert_eq!(err.service, "default/hostnames");
    assert_eq!(err.field, "spec.loadBalancerSourceRanges");
    assert_eq!(err.value, "1.2.3.4");
    let text = err.to_string();
    assert!(
        text.contains("default/hostnames") && text.contains("\"1.2.3.4\""),
        "{text}"
    );

    let s = with_annotation(svc("LoadBalancer"), "10.0.0.0/8,bogus/99");
    let err = load_balancer_source_ranges(&s).expect_err("bogus range");
    assert_eq!(err.field, LB_SOURCE_RANGES_ANNOTATION);
    assert_eq!(err.value, "bogus/99");
}
