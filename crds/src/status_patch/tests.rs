use super::*;
use crate::ports::PortStatus;

#[test]
fn apply_patch_carries_type_and_status_only() {
    let mut status = CloudLoadBalancerStatus {
        ingress_ip: Some("203.0.113.5".into()),
        ..CloudLoadBalancerStatus::default()
    };
    status.set_ports(vec![PortStatus::new(443, "TCP")]);
    let patch = status.apply_patch().unwrap();
    assert_eq!(patch["apiVersion"], "svcnet.dev/v1alpha1");
    assert_eq!(patch["kind"], "CloudLoadBalancer");
    assert_eq!(patch["status"]["ingressIP"], "203.0.113.5");
    assert_eq!(patch["status"]["portsSummary"], "443/TCP");
    assert_eq!(
        patch.as_object().map(|o| o.len()),
        Some(3),
        "no spec or metadata: {patch}"
    );
    assert!(
        patch["status"].get("lastError").is_none(),
        "cleared fields are omitted"
    );
}
