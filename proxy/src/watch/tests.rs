//! The stores hold records: converting an object must keep everything the model reads (the model from
//! records equals the model from the objects), its identity (the store keys it as it keyed the object)
//! and the trigger time; the Node, still an object, is only trimmed.

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::reflector::ObjectRef;

use super::*;
use crate::model::endpoints::trigger_time;
use crate::model::{Family, ModelCache, ProxyState};

const SERVICE: &str = r#"
metadata:
  name: web
  namespace: default
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"big": "copy"}', keep: me}
  managedFields: [{manager: kubectl, operation: Apply, apiVersion: v1}]
  resourceVersion: "42"
  uid: 1234
spec:
  type: LoadBalancer
  clusterIP: 10.0.0.10
  clusterIPs: [10.0.0.10, "fd00::10"]
  ipFamilies: [IPv4, IPv6]
  selector: {app: web}
  externalTrafficPolicy: Local
  healthCheckNodePort: 32000
  ports: [{port: 80, targetPort: 8080, nodePort: 30080}]
status: {loadBalancer: {ingress: [{ip: 203.0.113.7}]}}
"#;

fn slice(name: &str, address_type: &str, addr: &str) -> EndpointSlice {
    crate::yaml::from_str(&format!(
        r#"
metadata:
  name: {name}
  namespace: default
  labels: {{kubernetes.io/service-name: web}}
  annotations: {{endpoints.kubernetes.io/last-change-trigger-time: "2026-11-21T10:00:00Z"}}
  managedFields: [{{manager: endpointslice-controller, operation: Update, apiVersion: discovery.k8s.io/v1}}]
addressType: {address_type}
ports: [{{port: 8080, protocol: TCP}}]
endpoints:
- addresses: ["{addr}"]
  conditions: {{ready: true, serving: true, terminating: false}}
  nodeName: node-1
  zone: z1
  hostname: web-0
  targetRef: {{kind: Pod, name: web-0, namespace: default, uid: 1234}}
  hints: {{forZones: [{{name: z1}}]}}
"#
    ))
    .expect("slice yaml")
}

#[test]
fn records_give_the_same_model_as_the_objects() {
    let svc: Service = crate::yaml::from_str(SERVICE).expect("service");
    let slices = [
        slice("web-v4", "IPv4", "10.64.1.5"),
        slice("web-v6", "IPv6", "fd00::1:5"),
    ];
    let svc_rec = Arc::new(svc.clone().convert(&mut ()));
    let mut names = Interner::default();
    let slice_recs: Vec<Arc<SliceRecord>> = slices
        .iter()
        .map(|s| Arc::new(s.clone().convert(&mut names)))
        .collect();
    for family in [Family::V4, Family::V6] {
        let want = ProxyState::from_k8s([&svc], &slices, family);
        let mut cache = ModelCache::new(family);
        cache.update(std::slice::from_ref(&svc_rec), &slice_recs);
        let got = cache.state();
        assert!(want.errors.is_empty(), "{:?}", want.errors);
        assert!(got.errors.is_empty(), "{:?}", got.errors);
        assert_eq!(got.services, want.services, "{family:?}");
        assert_eq!(got.endpoints, want.endpoints, "{family:?}");
        assert_eq!(got.services.len(), 1, "{family:?}");
        assert_eq!(got.endpoints.values().map(|e| e.len()).sum::<usize>(), 1);
    }
    // Both slices' endpoints run on node-1: one shared name.
    let n: Vec<&Arc<str>> = slice_recs
        .iter()
        .filter_map(|r| r.ports[0].endpoints[0].node_name.as_ref())
        .collect();
    assert!(n.len() == 2 && Arc::ptr_eq(n[0], n[1]));
    // The trigger time (network programming latency) survives.
    assert_eq!(slice_recs[0].trigger_time, trigger_time(&slices[0]));
    assert!(slice_recs[0].trigger_time.is_some());
}

#[test]
fn records_keep_the_identity_and_nothing_else_of_the_metadata() {
    let svc: Service = crate::yaml::from_str(SERVICE).expect("service");
    let s = slice("web-v4", "IPv4", "10.64.1.5");
    let svc_rec = svc.clone().convert(&mut ());
    let slice_rec = s.clone().convert(&mut Interner::default());
    // The store keys a record as it keyed the object, under the same API type.
    assert_eq!(
        ObjectRef::from_obj(&svc_rec).erase(),
        ObjectRef::from_obj(&svc).erase()
    );
    assert_eq!(
        ObjectRef::from_obj(&slice_rec).erase(),
        ObjectRef::from_obj(&s).erase()
    );
    assert_eq!(ServiceRecord::kind(&()), "Service");
    assert_eq!(SliceRecord::plural(&()), "endpointslices");
    assert_eq!(SliceRecord::api_version(&()), "discovery.k8s.io/v1");
    assert_eq!(svc_rec.meta.name.as_deref(), Some("web"));
    assert_eq!(svc_rec.meta.namespace.as_deref(), Some("default"));
    assert!(svc_rec.meta.annotations.is_none() && svc_rec.meta.managed_fields.is_none());
    assert!(slice_rec.meta.labels.is_none() && slice_rec.meta.resource_version.is_none());
    assert_eq!(slice_rec.service_name, "web");
}

#[test]
fn the_store_holds_records_by_name_and_namespace() {
    let (reader, mut writer) = reflector::store::<SliceRecord>();
    let mut names = Interner::default();
    let mut conv = |s: EndpointSlice| s.convert(&mut names);
    for ev in [
        Event::Init,
        Event::InitApply(slice("a", "IPv4", "10.64.1.5")),
        Event::InitApply(slice("b", "IPv4", "10.64.1.6")),
        Event::InitDone,
        // An update replaces the record of the same name.
        Event::Apply(slice("a", "IPv4", "10.64.1.7")),
        Event::Delete(slice("b", "IPv4", "10.64.1.6")),
    ] {
        writer.apply_watcher_event(&map_event(ev, &mut conv));
    }
    let state = reader.state();
    assert_eq!(state.len(), 1);
    let a = &state[0];
    assert_eq!(a.meta.name.as_deref(), Some("a"));
    assert_eq!(a.ports[0].endpoints[0].addr(), "10.64.1.7:8080");
}

#[test]
fn trimmed_node_keeps_what_the_proxy_reads() {
    let node: Node = crate::yaml::from_str(
        r#"
metadata: {name: node-1, labels: {topology.kubernetes.io/zone: z1}}
spec: {podCIDR: 10.64.1.0/24, podCIDRs: [10.64.1.0/24]}
status:
  addresses: [{type: InternalIP, address: 10.128.0.2}]
  images: [{names: [registry/app:v1], sizeBytes: 1000}]
"#,
    )
    .expect("node");
    let t = node.clone().convert(&mut ());
    let st = t.status.as_ref().expect("status");
    assert!(st.images.is_none());
    assert_eq!(
        st.addresses,
        node.status.as_ref().and_then(|s| s.addresses.clone())
    );
    assert_eq!(t.spec, node.spec);
    assert_eq!(t.metadata.labels, node.metadata.labels);
}

#[test]
fn changes_are_queued_for_every_family_health_tracks_including_ipv6_added_later() {
    let (metrics, _registry) = Metrics::new();
    let health = Health::new(std::time::Duration::from_secs(60), vec![Family::V4]);
    let sink = Sink {
        changes: Arc::default(),
        trigger: Trigger::default(),
        health: Arc::clone(&health),
        metrics: Arc::clone(&metrics),
        service_hold: std::time::Duration::ZERO,
    };
    // The daemon adds IPv6 once the Node is known, after the watches (and their sinks) started.
    health.add_family(Family::V6);
    sink.record(Changes::other_changed);
    for f in [Family::V4, Family::V6] {
        let queued = metrics
            .last_queued_timestamp
            .get_or_create(&family_labels(f))
            .get();
        assert!(queued > 0.0, "{f:?}: last queued timestamp not set");
    }
}

/// The ServiceCIDRs' ranges as upstream's ServiceCIDRConfig collects them: every object's
/// `spec.cidrs`, both families, each once.
#[test]
fn service_cidrs_union_of_every_object() {
    let obj = |name: &str, cidrs: &[&str]| -> ServiceCIDR {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {"cidrs": cidrs},
        }))
        .expect("ServiceCIDR")
    };
    let objs = [
        obj("kubernetes", &["10.96.0.0/16", "fd00:10:96::/108"]),
        obj("extra", &["10.100.0.0/16", "10.96.0.0/16", "not-a-cidr"]),
        ServiceCIDR::default(),
    ];
    let got: Vec<String> = cidrs_of(objs.iter()).iter().map(ToString::to_string).collect();
    assert_eq!(got, ["10.96.0.0/16", "10.100.0.0/16", "fd00:10:96::/108"]);
    assert!(cidrs_of([].iter()).is_empty());
}
