//! Trimming must drop only what the proxy never reads: the model built from trimmed objects equals
//! the model built from the originals.

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::*;
use crate::model::{Family, ProxyState};

const SERVICE: &str = r#"
metadata:
  name: web
  namespace: default
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"big": "copy"}', keep: me}
  managedFields: [{manager: kubectl, operation: Apply, apiVersion: v1}]
spec:
  type: LoadBalancer
  clusterIP: 10.0.0.10
  selector: {app: web}
  externalTrafficPolicy: Local
  healthCheckNodePort: 32000
  ports: [{port: 80, targetPort: 8080, nodePort: 30080}]
status: {loadBalancer: {ingress: [{ip: 203.0.113.7}]}}
"#;

const SLICE: &str = r#"
metadata:
  name: web-abc
  namespace: default
  labels: {kubernetes.io/service-name: web}
  annotations: {endpoints.kubernetes.io/last-change-trigger-time: "2026-11-21T10:00:00Z"}
  managedFields: [{manager: endpointslice-controller, operation: Update, apiVersion: discovery.k8s.io/v1}]
addressType: IPv4
ports: [{port: 8080, protocol: TCP}]
endpoints:
- addresses: [10.64.1.5]
  conditions: {ready: true, serving: true, terminating: false}
  nodeName: node-1
  zone: z1
  hostname: web-0
  targetRef: {kind: Pod, name: web-0, namespace: default, uid: 1234}
  hints: {forZones: [{name: z1}]}
"#;

#[test]
fn trimmed_objects_give_the_same_model() {
    let svc: Service = serde_yaml::from_str(SERVICE).expect("service");
    let slice: EndpointSlice = serde_yaml::from_str(SLICE).expect("slice");
    let mut t_svc = svc.clone();
    t_svc.trim();
    let mut t_slice = slice.clone();
    t_slice.trim();

    let a = ProxyState::from_k8s([&svc], [&slice], Family::V4);
    let b = ProxyState::from_k8s([&t_svc], [&t_slice], Family::V4);
    assert!(a.errors.is_empty(), "{:?}", a.errors);
    assert_eq!(a.services, b.services);
    assert_eq!(a.endpoints, b.endpoints);
    assert!(!b.endpoints.is_empty());

    assert!(t_svc.metadata.managed_fields.is_none());
    let ann = t_svc.metadata.annotations.as_ref().expect("annotations");
    assert!(!ann.contains_key(LAST_APPLIED) && ann.contains_key("keep"));
    assert!(t_slice.endpoints[0].target_ref.is_none());
    // The trigger time (network programming latency) survives.
    assert_eq!(trigger_time(&t_slice), trigger_time(&slice));
    assert!(trigger_time(&t_slice).is_some());
}

#[test]
fn trimmed_node_keeps_what_the_proxy_reads() {
    let node: Node = serde_yaml::from_str(
        r#"
metadata: {name: node-1, labels: {topology.kubernetes.io/zone: z1}}
spec: {podCIDR: 10.64.1.0/24, podCIDRs: [10.64.1.0/24]}
status:
  addresses: [{type: InternalIP, address: 10.128.0.2}]
  images: [{names: [registry/app:v1], sizeBytes: 1000}]
"#,
    )
    .expect("node");
    let mut t = node.clone();
    t.trim();
    let st = t.status.as_ref().expect("status");
    assert!(st.images.is_none());
    assert_eq!(
        st.addresses,
        node.status.as_ref().and_then(|s| s.addresses.clone())
    );
    assert_eq!(t.spec, node.spec);
    assert_eq!(t.metadata.labels, node.metadata.labels);
}
