use super::*;

fn cfg() -> ServiceConfig {
    ServiceConfig {
        cidrs: "10.0.0.0/24".parse().unwrap(),
        node_ports: (30000, 30002),
    }
}

#[test]
fn defaults_and_allocates() {
    let alloc = Allocations::default();
    let mut svc =
        json!({"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [{"port": 80}]}});
    admit(&cfg(), &alloc, &mut svc, None).unwrap();
    let spec = &svc["spec"];
    assert_eq!(spec["clusterIP"], "10.0.0.17");
    assert_eq!(spec["ports"][0]["protocol"], "TCP");
    assert_eq!(spec["ports"][0]["targetPort"], 80);
    assert_eq!(spec["ports"][0]["nodePort"], 30000);
    assert_eq!(spec["healthCheckNodePort"], 30001);
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
}

#[test]
fn conflicts_and_ranges_are_invalid() {
    let mut alloc = Allocations::default();
    let mut a = json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.10", "ports": [{"port": 80, "nodePort": 30001}]}});
    admit(&cfg(), &alloc, &mut a, None).unwrap();
    alloc.track(None, Some(&a));
    let mut b = json!({"spec": {"clusterIP": "10.0.0.10", "ports": [{"port": 80}]}});
    assert!(admit(&cfg(), &alloc, &mut b, None).is_err());
    let mut c = json!({"spec": {"clusterIP": "10.9.0.1", "ports": [{"port": 80}]}});
    assert!(admit(&cfg(), &alloc, &mut c, None).is_err());
    let mut d = json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30001}]}});
    assert!(admit(&cfg(), &alloc, &mut d, None).is_err());
    let mut e = json!({"spec": {"ports": [{"port": 70000, "protocol": "ICMP"}]}});
    let causes = admit(&cfg(), &alloc, &mut e, None).unwrap_err();
    assert_eq!(causes.len(), 2, "{causes:?}");
    // Update keeps allocated values; type change to ClusterIP drops node ports.
    let mut upd = json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80}]}});
    admit(&cfg(), &alloc, &mut upd, Some(&a)).unwrap();
    assert_eq!(upd["spec"]["clusterIP"], "10.0.0.10");
    assert!(upd["spec"]["ports"][0].get("nodePort").is_none());
}
