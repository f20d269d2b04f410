//! The conversion cache must be invisible: after any sequence of object changes, the records it is fed
//! yield exactly what converting every API object from scratch yields.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use proptest::prelude::*;

use super::*;
use crate::model::{Interner, ProxyState, arbitrary, parse_slice};

/// The API objects and the records the watch made of them (a record changes only with its object).
#[derive(Default)]
struct World {
    services: Vec<(Service, Arc<ServiceRecord>)>,
    slices: Vec<(EndpointSlice, Arc<SliceRecord>)>,
    names: Interner,
}

/// Objects are unique by namespace/name, as in a store: adding one under an existing name replaces it.
impl World {
    fn add_service(&mut self, s: Service) {
        let r = Arc::new(ServiceRecord::from_service(&s));
        self.services.retain(|(o, _)| {
            (&o.metadata.namespace, &o.metadata.name) != (&s.metadata.namespace, &s.metadata.name)
        });
        self.services.push((s, r));
    }
    fn add_slice(&mut self, s: EndpointSlice) {
        let r = Arc::new(parse_slice(&s, &mut self.names));
        self.slices.retain(|(o, _)| {
            (&o.metadata.namespace, &o.metadata.name) != (&s.metadata.namespace, &s.metadata.name)
        });
        self.slices.push((s, r));
    }
}

fn service(name: &str, ip: &str, port: u16) -> Service {
    crate::yaml::from_str(&format!(
        "metadata: {{name: {name}, namespace: default}}\nspec: {{clusterIP: {ip}, ports: [{{port: {port}}}]}}\n"
    ))
    .expect("service yaml")
}

fn slice(name: &str, svc: &str, ips: &[&str]) -> EndpointSlice {
    let mut y = format!(
        "metadata: {{name: {name}, namespace: default, labels: {{kubernetes.io/service-name: {svc}}}}}\naddressType: IPv4\nports: [{{port: 80, protocol: TCP}}]\nendpoints:\n"
    );
    for ip in ips {
        y += &format!("- {{addresses: [{ip}], conditions: {{ready: true}}}}\n");
    }
    crate::yaml::from_str(&y).expect("slice yaml")
}

fn compare(cache: &mut ModelCache, w: &World, step: &str) -> Result<(), String> {
    let svc_recs: Vec<Arc<ServiceRecord>> = w.services.iter().map(|(_, r)| Arc::clone(r)).collect();
    let slice_recs: Vec<Arc<SliceRecord>> = w.slices.iter().map(|(_, r)| Arc::clone(r)).collect();
    let before = cache.state().clone();
    cache.update(&svc_recs, &slice_recs);
    unchanged_outside_changed(&before, cache).map_err(|e| format!("{step}: {e}"))?;
    let got = cache.state();
    let want = ProxyState::from_k8s(
        w.services.iter().map(|(s, _)| s),
        w.slices.iter().map(|(s, _)| s),
        cache.family,
    );
    if got.services != want.services {
        return Err(format!(
            "{step}: services {:?} != {:?}",
            got.services, want.services
        ));
    }
    if got.endpoints != want.endpoints {
        return Err(format!(
            "{step}: endpoints {:?} != {:?}",
            got.endpoints, want.endpoints
        ));
    }
    let mut a: Vec<String> = got.errors.iter().map(ToString::to_string).collect();
    let mut b: Vec<String> = want.errors.iter().map(ToString::to_string).collect();
    a.sort();
    b.sort();
    if a != b {
        return Err(format!("{step}: errors {a:?} != {b:?}"));
    }
    Ok(())
}

/// Every port name whose `services` or `endpoints` entry is not the very `Arc` it was before the
/// update is among those the update reports changed (the maps layout's sync visits only those).
fn unchanged_outside_changed(before: &ProxyState, cache: &ModelCache) -> Result<(), String> {
    let Changed::Ports(changed) = cache.changed() else {
        return Ok(());
    };
    let after = cache.state();
    let names = before.services.keys().chain(before.endpoints.keys());
    let names = names.chain(after.services.keys()).chain(after.endpoints.keys());
    for name in names {
        let same_svc = match (before.services.get(name), after.services.get(name)) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        let same_eps = match (before.endpoints.get(name), after.endpoints.get(name)) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        let same = same_svc && same_eps;
        if !same && !changed.contains(name) {
            return Err(format!("{name:?} changed but is not reported ({changed:?})"));
        }
    }
    Ok(())
}

fn check(cache: &mut ModelCache, w: &World, step: &str) {
    if let Err(e) = compare(cache, w, step) {
        panic!("{e}");
    }
}

fn named<'a, T>(v: &'a mut [(T, Arc<SliceRecord>)], name: &str) -> Option<&'a mut (T, Arc<SliceRecord>)> {
    v.iter_mut().find(|(_, r)| r.meta.name.as_deref() == Some(name))
}

#[test]
fn cached_conversion_equals_conversion_from_scratch() {
    let mut cache = ModelCache::new(Family::V4);
    let mut w = World::default();
    w.add_service(service("a", "10.0.0.1", 80));
    w.add_service(service("b", "10.0.0.2", 80));
    w.add_slice(slice("a-1", "a", &["10.1.0.1", "10.1.0.2"]));
    w.add_slice(slice("a-2", "a", &["10.1.0.3"]));
    w.add_slice(slice("b-1", "b", &["10.2.0.1"]));
    check(&mut cache, &w, "first");
    check(&mut cache, &w, "nothing changed");
    assert_eq!(cache.changed(), &Changed::Ports(Default::default()));
    // The stores may list records in another order.
    w.slices.reverse();
    w.services.reverse();
    check(&mut cache, &w, "reordered");
    // A changed Service is a new record with new content.
    let b = service("b", "10.0.0.2", 8080);
    w.services[0] = (b.clone(), Arc::new(ServiceRecord::from_service(&b)));
    check(&mut cache, &w, "service port changed");
    let Changed::Ports(changed) = cache.changed() else {
        panic!("a second update reports ports");
    };
    let names: Vec<&str> = changed.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["b"], "only b's port, not a's");
    // One slice of a changes; another slice of a is removed; a slice appears for c.
    w.slices.retain(|(_, r)| r.meta.name.as_deref() != Some("a-2"));
    let a1 = slice("a-1", "a", &["10.1.0.9"]);
    let rec = Arc::new(parse_slice(&a1, &mut w.names));
    if let Some(s) = named(&mut w.slices, "a-1") {
        *s = (a1, rec);
    }
    w.add_slice(slice("c-1", "c", &["10.3.0.1"]));
    check(&mut cache, &w, "slices changed");
    // A bad object is reported every sync, also when it comes from the cache.
    w.add_service(service("Bad_Name", "10.0.0.3", 80));
    w.add_slice(slice("bad-1", "Bad_Name", &["10.4.0.1"]));
    check(&mut cache, &w, "bad objects");
    check(&mut cache, &w, "bad objects again");
    assert_eq!(cache.state().errors.len(), 2, "{:?}", cache.state().errors);
    // Everything deleted.
    check(&mut cache, &World::default(), "empty");
    assert!(cache.state().services.is_empty() && cache.state().endpoints.is_empty());
}

/// One change to the world: add, replace (same name, new content) or delete an object.
#[derive(Clone, Debug)]
enum Change {
    AddService(Box<Service>),
    AddSlice(Box<EndpointSlice>),
    ReplaceSlice(usize, Box<EndpointSlice>),
    DeleteService(usize),
    DeleteSlice(usize),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        2 => arbitrary::service().prop_map(|s| Change::AddService(Box::new(s))),
        3 => arbitrary::slice().prop_map(|s| Change::AddSlice(Box::new(s))),
        3 => (any::<usize>(), arbitrary::slice()).prop_map(|(i, s)| Change::ReplaceSlice(i, Box::new(s))),
        1 => any::<usize>().prop_map(Change::DeleteService),
        2 => any::<usize>().prop_map(Change::DeleteSlice),
    ]
}

fn apply(w: &mut World, c: Change) {
    match c {
        Change::AddService(s) => w.add_service(*s),
        Change::AddSlice(s) => w.add_slice(*s),
        Change::ReplaceSlice(i, mut s) if !w.slices.is_empty() => {
            // Keep the identity (namespace/name) of the slice it replaces, as an update does.
            let i = i % w.slices.len();
            s.metadata.name.clone_from(&w.slices[i].0.metadata.name);
            s.metadata.namespace.clone_from(&w.slices[i].0.metadata.namespace);
            let r = Arc::new(parse_slice(&s, &mut w.names));
            w.slices[i] = (*s, r);
        }
        Change::ReplaceSlice(_, s) => w.add_slice(*s),
        Change::DeleteService(i) if !w.services.is_empty() => {
            let i = i % w.services.len();
            w.services.remove(i);
        }
        Change::DeleteSlice(i) if !w.slices.is_empty() => {
            let i = i % w.slices.len();
            w.slices.remove(i);
        }
        Change::DeleteService(_) | Change::DeleteSlice(_) => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn cache_equals_from_scratch_over_random_change_sequences(
        changes in prop::collection::vec(change(), 1..24),
    ) {
        let mut v4 = ModelCache::new(Family::V4);
        let mut v6 = ModelCache::new(Family::V6);
        let mut w = World::default();
        for (i, c) in changes.into_iter().enumerate() {
            apply(&mut w, c);
            for cache in [&mut v4, &mut v6] {
                if let Err(e) = compare(cache, &w, &format!("step {i}")) {
                    return Err(TestCaseError::fail(e));
                }
            }
        }
    }
}
