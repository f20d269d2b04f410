use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

fn service(name: Option<&str>, namespace: Option<&str>, uid: Option<&str>) -> Service {
    Service {
        metadata: ObjectMeta {
            name: name.map(str::to_owned),
            namespace: namespace.map(str::to_owned),
            uid: uid.map(str::to_owned),
            ..ObjectMeta::default()
        },
        ..Service::default()
    }
}

#[test]
fn mirrors_service_identity_and_is_controlled_by_it() {
    let svc = service(
        Some("hostnames"),
        Some("shop"),
        Some("6c1a1b8e-0d3e-4c52-9f0e-1b2c3d4e5f60"),
    );
    let clb = CloudLoadBalancer::for_service(&svc).unwrap();
    assert_eq!(clb.metadata.name.as_deref(), Some("hostnames"));
    assert_eq!(clb.metadata.namespace.as_deref(), Some("shop"));
    assert_eq!(clb.spec.service_name, "hostnames");
    assert_eq!(clb.spec.service_uid, "6c1a1b8e-0d3e-4c52-9f0e-1b2c3d4e5f60");
    assert_eq!(clb.status, None);

    let owners = clb.metadata.owner_references.unwrap();
    assert_eq!(owners.len(), 1);
    let owner = &owners[0];
    assert_eq!(owner.api_version, "v1");
    assert_eq!(owner.kind, "Service");
    assert_eq!(owner.name, "hostnames");
    assert_eq!(owner.uid, "6c1a1b8e-0d3e-4c52-9f0e-1b2c3d4e5f60");
    assert_eq!(owner.controller, Some(true));
    assert_eq!(owner.block_owner_deletion, Some(true));
}

#[test]
fn serializes_with_group_version_kind() {
    let clb = CloudLoadBalancer::for_service(&service(Some("web"), Some("default"), Some("u1"))).unwrap();
    let json = serde_json::to_value(&clb).unwrap();
    assert_eq!(json["apiVersion"], "svcnet.dev/v1alpha1");
    assert_eq!(json["kind"], "CloudLoadBalancer");
    assert_eq!(json["spec"]["serviceUID"], "u1");
    assert_eq!(json["spec"]["serviceName"], "web");
}

#[test]
fn refuses_services_without_identity() {
    let cases = [
        (service(None, Some("ns"), Some("u")), "name"),
        (service(Some("n"), None, Some("u")), "namespace"),
        (service(Some("n"), Some("ns"), None), "uid"),
    ];
    for (svc, field) in cases {
        assert_eq!(
            CloudLoadBalancer::for_service(&svc),
            Err(ForServiceError::MissingField(field))
        );
    }
}
