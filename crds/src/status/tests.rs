use super::*;

fn pool(instances: &[&str]) -> TargetPoolStatus {
    TargetPoolStatus {
        name: "a1234".into(),
        self_link: None,
        instances: instances.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn set_ports_keeps_summary_in_sync() {
    let mut status = CloudLoadBalancerStatus::default();
    status.set_ports(vec![PortStatus::new(80, "TCP"), PortStatus::new(443, "TCP")]);
    assert_eq!(status.ports.len(), 2);
    assert_eq!(status.ports_summary.as_deref(), Some("80/TCP,443/TCP"));

    status.set_ports(Vec::new());
    assert!(status.ports.is_empty());
    assert_eq!(status.ports_summary, None, "no ports must clear the PORTS column");
}

#[test]
fn set_target_pool_counts_instances() {
    let mut status = CloudLoadBalancerStatus::default();
    status.set_target_pool(Some(pool(&["zones/z/instances/n1", "zones/z/instances/n2"])));
    assert_eq!(status.node_count, Some(2));
    let stored = status.gce.as_ref().and_then(|g| g.target_pool.as_ref());
    assert_eq!(stored.map(|p| p.instances.len()), Some(2));

    status.set_target_pool(Some(pool(&[])));
    assert_eq!(status.node_count, Some(0));

    status.set_target_pool(None);
    assert_eq!(status.node_count, None);
    assert_eq!(status.gce.as_ref().and_then(|g| g.target_pool.as_ref()), None);
}

#[test]
fn set_target_pool_keeps_other_gce_objects() {
    let mut status = CloudLoadBalancerStatus {
        gce: Some(GceResources {
            forwarding_rule: Some(GceResourceRef {
                name: "a1234".into(),
                self_link: None,
            }),
            ..GceResources::default()
        }),
        ..CloudLoadBalancerStatus::default()
    };
    status.set_target_pool(Some(pool(&["n1"])));
    let gce = status.gce.as_ref().unwrap();
    assert_eq!(
        gce.forwarding_rule.as_ref().map(|r| r.name.as_str()),
        Some("a1234")
    );
}

#[test]
fn empty_status_serializes_to_empty_object() {
    let json = serde_json::to_value(CloudLoadBalancerStatus::default()).unwrap();
    assert_eq!(json, serde_json::json!({}));
}

#[test]
fn json_field_names_follow_kubernetes_conventions() {
    let mut status = CloudLoadBalancerStatus {
        ingress_ip: Some("203.0.113.7".into()),
        last_error: Some("quota".into()),
        observed_generation: Some(3),
        ..CloudLoadBalancerStatus::default()
    };
    status.set_ports(vec![PortStatus::new(80, "TCP")]);
    status.set_target_pool(Some(pool(&["n1"])));
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["ingressIP"], "203.0.113.7");
    assert_eq!(json["portsSummary"], "80/TCP");
    assert_eq!(json["nodeCount"], 1);
    assert_eq!(json["lastError"], "quota");
    assert_eq!(json["observedGeneration"], 3);
    assert_eq!(json["gce"]["targetPool"]["instances"][0], "n1");
    let back: CloudLoadBalancerStatus = serde_json::from_value(json).unwrap();
    assert_eq!(back, status);
}
