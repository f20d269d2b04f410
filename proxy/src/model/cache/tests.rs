//! The conversion cache must be invisible: after any sequence of object changes it yields exactly
//! what converting everything from scratch yields.

use std::sync::Arc;

use super::*;
use crate::model::ProxyState;

fn service(name: &str, ip: &str, port: u16) -> Arc<Service> {
    Arc::new(
        serde_yaml::from_str(&format!(
            "metadata: {{name: {name}, namespace: default}}\nspec: {{clusterIP: {ip}, ports: [{{port: {port}}}]}}\n"
        ))
        .expect("service yaml"),
    )
}

fn slice(name: &str, svc: &str, ips: &[&str]) -> Arc<EndpointSlice> {
    let mut y = format!(
        "metadata: {{name: {name}, namespace: default, labels: {{kubernetes.io/service-name: {svc}}}}}\naddressType: IPv4\nports: [{{port: 80, protocol: TCP}}]\nendpoints:\n"
    );
    for ip in ips {
        y += &format!("- {{addresses: [{ip}], conditions: {{ready: true}}}}\n");
    }
    Arc::new(serde_yaml::from_str(&y).expect("slice yaml"))
}

fn check(cache: &mut ModelCache, services: &[Arc<Service>], slices: &[Arc<EndpointSlice>], step: &str) {
    cache.update(services, slices);
    let got = cache.state();
    let want = ProxyState::from_k8s(
        services.iter().map(AsRef::as_ref),
        slices.iter().map(AsRef::as_ref),
        Family::V4,
    );
    assert_eq!(got.services, want.services, "{step}: services");
    assert_eq!(got.endpoints, want.endpoints, "{step}: endpoints");
    let mut a: Vec<String> = got.errors.iter().map(ToString::to_string).collect();
    let mut b: Vec<String> = want.errors.iter().map(ToString::to_string).collect();
    a.sort();
    b.sort();
    assert_eq!(a, b, "{step}: errors");
}

#[test]
fn cached_conversion_equals_conversion_from_scratch() {
    let mut cache = ModelCache::new(Family::V4);
    let mut services = vec![service("a", "10.0.0.1", 80), service("b", "10.0.0.2", 80)];
    let mut slices = vec![
        slice("a-1", "a", &["10.1.0.1", "10.1.0.2"]),
        slice("a-2", "a", &["10.1.0.3"]),
        slice("b-1", "b", &["10.2.0.1"]),
    ];
    check(&mut cache, &services, &slices, "first");
    check(&mut cache, &services, &slices, "nothing changed");
    // The stores may list objects in another order.
    slices.reverse();
    services.reverse();
    check(&mut cache, &services, &slices, "reordered");
    // A changed Service is a new Arc with new content.
    services[0] = service("b", "10.0.0.2", 8080);
    check(&mut cache, &services, &slices, "service port changed");
    // One slice of a changes; another slice of a is removed; a slice appears for c.
    slices.retain(|s| s.metadata.name.as_deref() != Some("a-2"));
    if let Some(s) = slices
        .iter_mut()
        .find(|s| s.metadata.name.as_deref() == Some("a-1"))
    {
        *s = slice("a-1", "a", &["10.1.0.9"]);
    }
    slices.push(slice("c-1", "c", &["10.3.0.1"]));
    check(&mut cache, &services, &slices, "slices changed");
    // A bad object is reported every sync, also when it comes from the cache.
    services.push(service("Bad_Name", "10.0.0.3", 80));
    slices.push(slice("bad-1", "Bad_Name", &["10.4.0.1"]));
    check(&mut cache, &services, &slices, "bad objects");
    cache.update(&services, &slices);
    assert_eq!(cache.state().errors.len(), 2, "{:?}", cache.state().errors);
    // Everything deleted.
    check(&mut cache, &[], &[], "empty");
}
