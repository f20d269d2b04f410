//! The fixed corpus: every golden case's input (`tests/golden/*/input.yaml`, the walkthrough among
//! them) created through the API, then each of its EndpointSlices changed once and each of its
//! Services deleted one by one (each a state: partial syncs).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::{Step, Write, adapt_service, adapt_slice, key, namespace, shrink};

/// The objects every API server already has (kube-apiserver keeps `default/kubernetes` itself).
fn builtin(obj: &Value) -> bool {
    key(obj) == ("default".into(), "kubernetes".into())
}

/// The steps of one golden input.
pub fn steps(case: &str, input: &Path) -> Vec<Step> {
    let text = std::fs::read_to_string(input).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    // As the proxy reads its offline inputs (YAML 1.2 booleans).
    let docs: Vec<Value> = svcnet_proxy::yaml::from_multiple(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", input.display()))
        .into_iter()
        .filter(|d: &Value| !d.is_null())
        .collect();
    let input_node = docs
        .iter()
        .find(|d| d["kind"] == "Node")
        .and_then(|n| n["metadata"]["name"].as_str())
        .map(str::to_string);
    let mut services = Vec::new();
    let mut statuses = Vec::new();
    let mut slices = Vec::new();
    for doc in docs.into_iter().filter(|d| !builtin(d)) {
        match doc["kind"].as_str() {
            Some("Service") => {
                let (svc, status) = adapt_service(doc);
                services.push(svc);
                statuses.extend(status);
            }
            Some("EndpointSlice") => {
                let slice = adapt_slice(doc, input_node.as_deref());
                if slice["metadata"]["labels"]["kubernetes.io/service-name"] != "kubernetes" {
                    slices.push(slice);
                }
            }
            _ => {}
        }
    }
    let namespaces: BTreeSet<String> = services.iter().chain(&slices).map(|o| key(o).0).collect();
    let mut create: Vec<Value> = namespaces.iter().map(|n| namespace(n)).collect();
    create.extend(services.iter().cloned());
    create.extend(slices.iter().cloned());
    let mut writes = vec![Write::Apply(create)];
    if !statuses.is_empty() {
        writes.push(Write::Status(statuses));
    }
    let mut steps = vec![Step {
        name: format!("golden/{case}: create"),
        writes,
    }];
    for slice in &slices {
        steps.push(Step {
            name: format!("golden/{case}: endpoints of {} change", key(slice).1),
            writes: vec![Write::Apply(vec![shrink(slice)])],
        });
    }
    for svc in &services {
        let (ns, name) = key(svc);
        let mut objects = vec![("service", name.clone())];
        objects.extend(
            slices
                .iter()
                .filter(|s| {
                    s["metadata"]["labels"]["kubernetes.io/service-name"].as_str() == Some(name.as_str())
                        && key(s).0 == ns
                })
                .map(|s| ("endpointslice", key(s).1)),
        );
        steps.push(Step {
            name: format!("golden/{case}: delete {ns}/{name}"),
            writes: vec![Write::Delete { ns, objects }],
        });
    }
    steps
}
