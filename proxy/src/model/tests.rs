use super::*;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;

fn svc(yaml: &str) -> Service {
    crate::yaml::from_str(yaml).expect("service yaml")
}
fn slice(yaml: &str) -> EndpointSlice {
    crate::yaml::from_str(yaml).expect("slice yaml")
}

const HOSTNAMES: &str = r#"
metadata: {name: hostnames, namespace: default}
spec:
  type: LoadBalancer
  clusterIP: 10.79.255.4
  clusterIPs: [10.79.255.4, "fd00::4"]
  externalTrafficPolicy: Local
  healthCheckNodePort: 32000
  ports: [{port: 80, nodePort: 31358, protocol: TCP}]
  loadBalancerSourceRanges: ["1.2.3.0/24", "bogus", "fd00::/8"]
status:
  loadBalancer:
    ingress: [{ip: 104.199.232.159}, {ip: 1.1.1.1, ipMode: Proxy}]
"#;

#[test]
fn service_port_fields() {
    let s = svc(HOSTNAMES);
    let (ports, errors) = service_ports_from_service(&s, Family::V4);
    assert_eq!(ports.len(), 1);
    let p = &ports[0];
    assert_eq!(p.name.to_string(), "default/hostnames");
    assert_eq!(p.node_port, Some(31358));
    assert_eq!(p.health_check_node_port, Some(32000));
    assert!(p.external_policy_local);
    assert_eq!(
        p.load_balancer_vips,
        vec!["104.199.232.159".parse::<std::net::IpAddr>().unwrap()]
    );
    assert_eq!(p.source_ranges.as_ref().map(Vec::len), Some(1));
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].to_string().contains("spec.loadBalancerSourceRanges[1]"),
        "{}",
        errors[0]
    );
    assert!(errors[0].to_string().contains("default/hostnames"));

    let (v6, _) = service_ports_from_service(&s, Family::V6);
    assert_eq!(v6[0].cluster_ip.to_string(), "fd00::4");
    assert!(v6[0].load_balancer_vips.is_empty());
}

#[test]
fn skipped_services() {
    for y in [
        "metadata: {name: a}\nspec: {clusterIP: None, ports: [{port: 80}]}",
        "metadata: {name: a}\nspec: {type: ExternalName, externalName: x.example}",
        "metadata: {name: a, labels: {service.kubernetes.io/service-proxy-name: other}}\nspec: {clusterIP: 10.0.0.1, ports: [{port: 80}]}",
        "metadata: {name: a, labels: {service.kubernetes.io/headless: ''}}\nspec: {clusterIP: 10.0.0.1, ports: [{port: 80}]}",
    ] {
        let (ports, errors) = service_ports_from_service(&svc(y), Family::V4);
        assert!(ports.is_empty() && errors.is_empty(), "{y}");
    }
}

#[test]
fn hostile_names_are_refused_with_field() {
    let s = svc(
        "metadata: {name: 'a\" -j ACCEPT', namespace: default}\nspec: {clusterIP: 10.0.0.1, ports: [{port: 80}]}",
    );
    let (ports, errors) = service_ports_from_service(&s, Family::V4);
    assert!(ports.is_empty());
    assert!(errors[0].to_string().contains("metadata.name"), "{errors:?}");
    let s = svc(
        "metadata: {name: ok, namespace: default}\nspec: {clusterIP: 10.0.0.1, ports: [{port: 80, name: 'x y'}, {port: 81, name: good}]}",
    );
    let (ports, errors) = service_ports_from_service(&s, Family::V4);
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].name.port, "good");
    assert!(errors[0].to_string().contains("spec.ports[0].name"));
}

#[test]
fn every_rejected_field_is_reported_next_to_the_good_ports() {
    let s = svc(
        "metadata: {name: web, namespace: default}\nspec: {clusterIP: 10.0.0.1, externalIPs: [bogus, 192.168.099.011], \
         ports: [{port: 80, name: 'x y'}, {port: 81, name: ok}, {port: 82, name: udp, protocol: XTP}]}",
    );
    let (ports, errors) = service_ports_from_service(&s, Family::V4);
    assert_eq!(ports.len(), 1, "{ports:?}");
    assert_eq!(
        ports[0].external_ips,
        vec![std::net::IpAddr::from([192, 168, 99, 11])]
    );
    let fields: Vec<String> = errors
        .iter()
        .map(|e| match e {
            ModelError::Invalid { field, object, .. } => format!("{object} {field}"),
        })
        .collect();
    assert_eq!(
        fields,
        [
            "default/web spec.externalIPs[0]",
            "default/web spec.ports[0].name",
            "default/web spec.ports[2].protocol"
        ]
    );
}

#[test]
fn legacy_addresses_are_read_as_upstream_reads_them() {
    let s = svc(
        "metadata: {name: old, namespace: default}\nspec: {type: LoadBalancer, clusterIP: 172.30.0.041, \
         externalIPs: [192.168.099.011], loadBalancerSourceRanges: [203.0.113.000/025], ports: [{port: 80, nodePort: 3001}]}\n\
         status: {loadBalancer: {ingress: [{ip: 001.002.003.004}]}}",
    );
    let (ports, errors) = service_ports_from_service(&s, Family::V4);
    assert!(errors.is_empty(), "{errors:?}");
    let p = &ports[0];
    assert_eq!(p.cluster_ip.to_string(), "172.30.0.41");
    assert_eq!(p.external_ips[0].to_string(), "192.168.99.11");
    assert_eq!(p.load_balancer_vips[0].to_string(), "1.2.3.4");
    let ranges: Vec<String> = p
        .source_ranges
        .iter()
        .flatten()
        .map(ToString::to_string)
        .collect();
    assert_eq!(ranges, ["203.0.113.0/25"]);
}

#[test]
fn slices_merge_sort_and_dedupe() {
    let a = slice(
        r#"
metadata: {name: s-b, namespace: default, labels: {kubernetes.io/service-name: hostnames}}
addressType: IPv4
ports: [{port: 9376, protocol: TCP}]
endpoints:
- {addresses: [10.76.0.9], conditions: {ready: true}, nodeName: n1}
- {addresses: [not-an-ip]}
"#,
    );
    let b = slice(
        r#"
metadata: {name: s-a, namespace: default, labels: {kubernetes.io/service-name: hostnames}}
addressType: IPv4
ports: [{port: 9376, protocol: TCP}]
endpoints:
- {addresses: [10.76.0.10], conditions: {ready: false, serving: true, terminating: true}}
- {addresses: [10.76.0.9], conditions: {ready: false}}
"#,
    );
    let (eps, errors) = endpoints_from_slices(&[a, b], Family::V4);
    let key = ServicePortName {
        namespace: "default".into(),
        name: "hostnames".into(),
        port: String::new(),
        protocol: Protocol::Tcp,
    };
    let list = &eps[&key];
    assert_eq!(
        list.iter().map(Endpoint::addr).collect::<Vec<_>>(),
        vec!["10.76.0.10:9376", "10.76.0.9:9376"]
    );
    // s-a sorts first, so its (not ready) copy of 10.76.0.9 wins.
    assert!(!list[1].ready);
    assert!(list[0].terminating && list[0].serving);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].to_string().contains("endpoints[1].addresses[0]"));
}

fn ep(ip: &str, ready: bool, node: &str) -> Endpoint {
    Endpoint {
        ip: ip.parse().unwrap(),
        port: 80,
        ready,
        serving: ready,
        terminating: false,
        node_name: Some(node.into()),
        hints: None,
    }
}

fn hints(zones: &[&str], nodes: &[&str]) -> Option<Box<Hints>> {
    Some(Box::new(Hints {
        zones: zones.iter().map(ToString::to_string).collect(),
        nodes: nodes.iter().map(ToString::to_string).collect(),
    }))
}

fn port(local_ext: bool, local_int: bool) -> ServicePort {
    ServicePort {
        name: ServicePortName {
            namespace: "ns".into(),
            name: "s".into(),
            port: String::new(),
            protocol: Protocol::Tcp,
        },
        cluster_ip: "10.0.0.1".parse().unwrap(),
        port: 80,
        node_port: Some(30000),
        external_ips: vec![],
        load_balancer_vips: vec![],
        source_ranges: None,
        health_check_node_port: None,
        session_affinity: None,
        external_policy_local: local_ext,
        internal_policy_local: local_int,
    }
}

#[test]
fn categorize_policies_and_fallback() {
    let node = NodeFacts {
        name: "n1".into(),
        ..Default::default()
    };
    let eps = vec![ep("10.0.1.1", true, "n1"), ep("10.0.2.1", true, "n2")];
    let c = categorize(&eps, &port(false, false), &node);
    assert_eq!(c.cluster.len(), 2);
    assert!(c.local.is_empty());
    let c = categorize(&eps, &port(true, false), &node);
    assert_eq!(c.local.len(), 1);
    assert_eq!(c.all_reachable.len(), 2);
    let c = categorize(&eps, &port(false, true), &node);
    assert!(c.cluster.len() == 2 && c.local.len() == 1);

    // Terminating fallback when nothing is ready.
    let mut t = ep("10.0.3.1", false, "n2");
    t.serving = true;
    t.terminating = true;
    let c = categorize(
        &[t.clone(), ep("10.0.4.1", false, "n2")],
        &port(false, false),
        &node,
    );
    assert_eq!(c.cluster, vec![t]);
    assert!(c.has_any);
}

/// Upstream's UsesClusterEndpoints: a NodePort with both policies Local still has cluster endpoints,
/// which its external chain's short circuit for pod and node sources uses.
#[test]
fn both_policies_local_still_use_cluster_endpoints_for_the_short_circuit() {
    let node = NodeFacts {
        name: "n1".into(),
        ..Default::default()
    };
    let both_local = port(true, true);
    assert!(both_local.uses_cluster_endpoints());
    let eps = vec![ep("10.0.1.1", true, "n1"), ep("10.0.2.1", true, "n2")];
    let c = categorize(&eps, &both_local, &node);
    assert_eq!(c.cluster.len(), 2);
    assert_eq!(c.local.len(), 1);
    // A ClusterIP-only service with internal Local policy does not.
    let mut internal_only = port(false, true);
    internal_only.node_port = None;
    assert!(!internal_only.uses_cluster_endpoints());
}

#[test]
fn topology_hints() {
    let mut node = NodeFacts {
        name: "n1".into(),
        ..Default::default()
    };
    node.labels
        .insert("topology.kubernetes.io/zone".into(), "z1".into());
    let mut a = ep("10.0.1.1", true, "n1");
    a.hints = hints(&["z1"], &[]);
    let mut b = ep("10.0.2.1", true, "n2");
    b.hints = hints(&["z2"], &[]);
    let c = categorize(&[a.clone(), b.clone()], &port(false, false), &node);
    assert_eq!(c.cluster, vec![a.clone()]);
    assert_eq!(c.topology, topology::Topology::SameZone);
    // One endpoint without hints disables topology.
    b.hints = None;
    let c = categorize(&[a.clone(), b.clone()], &port(false, false), &node);
    assert_eq!(c.cluster.len(), 2);
    // Node hints win over zone hints.
    let mut a2 = a.clone();
    a2.hints = hints(&["z1"], &["n9"]);
    let mut b2 = ep("10.0.2.1", true, "n1");
    b2.hints = hints(&["z1"], &["n1"]);
    let c = categorize(&[a2, b2.clone()], &port(false, false), &node);
    assert_eq!(c.cluster, vec![b2]);
    assert_eq!(c.topology, topology::Topology::SameNode);
}

/// 100k endpoints at P4: every byte of Endpoint is 100 kB of the daemon's memory.
#[test]
fn endpoint_stays_small() {
    assert!(
        std::mem::size_of::<Endpoint>() <= 48,
        "{}",
        std::mem::size_of::<Endpoint>()
    );
}
