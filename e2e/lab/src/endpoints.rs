//! The endpoint controllers of the lab (run by the VPC agent): for every Service in `default` with a
//! selector, from the lab pods whose labels (`app=<name>`) match,
//! - one EndpointSlice `<service>-lab` with their node names and conditions (ready + serving; a pod
//!   being deleted is terminating: not ready, still serving, as the endpoint-slice controller reports it);
//! - the v1 Endpoints `<service>` the endpoints controller keeps (what `kubectl get endpoints` shows):
//!   ready pods only, since upstream leaves terminating pods out of Endpoints (unless the Service
//!   publishes not-ready addresses); deleted again when its Service is gone.
//!
//! Both are written only when they change.

use std::collections::BTreeMap;

use anyhow::Result;
use serde_json::{Value, json};

use crate::cluster::api_url;
use crate::http;
use crate::state::{Pod, State};

#[derive(Default)]
pub struct Sync {
    written: BTreeMap<String, Value>,
}

/// Whether a pod with label `app=<pod.app>` matches the selector.
fn matches(selector: &serde_json::Map<String, Value>, pod: &Pod) -> bool {
    !selector.is_empty()
        && selector
            .iter()
            .all(|(k, v)| k == "app" && v.as_str() == Some(pod.app.as_str()))
}

/// (name, target port, protocol) of each Service port; the port itself when targetPort is absent.
fn target_ports(svc: &Value) -> Vec<(&str, u64, &str)> {
    svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let port = p["targetPort"].as_u64().or(p["port"].as_u64()).unwrap_or(0);
            (
                p["name"].as_str().unwrap_or(""),
                port,
                p["protocol"].as_str().unwrap_or("TCP"),
            )
        })
        .collect()
}

/// The slice for `svc` over `pods` (pure).
pub fn slice(svc: &Value, pods: &[Pod]) -> Option<Value> {
    let name = svc["metadata"]["name"].as_str()?;
    let selector = svc["spec"]["selector"].as_object()?;
    let ports: Vec<Value> = target_ports(svc)
        .into_iter()
        .map(|(name, port, protocol)| json!({"name": name, "port": port, "protocol": protocol}))
        .collect();
    let eps: Vec<Value> = pods
        .iter()
        .filter(|p| matches(selector, p))
        .map(|p| {
            json!({"addresses": [p.ip], "nodeName": p.node,
                   "conditions": {"ready": !p.terminating, "serving": true, "terminating": p.terminating},
                   "targetRef": {"kind": "Pod", "namespace": "default", "name": p.name}})
        })
        .collect();
    // Like the endpoint-slice controller: the Service's labels plus the two the proxy selects on.
    let mut labels = svc["metadata"]["labels"].as_object().cloned().unwrap_or_default();
    labels.insert("kubernetes.io/service-name".into(), json!(name));
    labels.insert(
        "endpointslice.kubernetes.io/managed-by".into(),
        json!("svcnet-lab"),
    );
    Some(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {
            "name": format!("{name}-lab"), "namespace": "default",
            "labels": labels
        },
        "addressType": "IPv4",
        "endpoints": eps,
        "ports": ports
    }))
}

/// The v1 Endpoints for `svc` over `pods` (pure), as the endpoints controller writes it: the Service's
/// name and labels, one subset with the matching pods' addresses (sorted by IP as text, as upstream
/// repacks them) and the target ports. A terminating pod is left out (upstream's ShouldPodBeInEndpoints)
/// unless the Service sets `publishNotReadyAddresses`, which lists it as ready; every lab pod that is
/// not terminating is ready, so `notReadyAddresses` stays empty. No pods: no subsets.
pub fn endpoints(svc: &Value, pods: &[Pod]) -> Option<Value> {
    let name = svc["metadata"]["name"].as_str()?;
    let selector = svc["spec"]["selector"].as_object()?;
    let publish_not_ready = svc["spec"]["publishNotReadyAddresses"].as_bool() == Some(true);
    let mut listed: Vec<&Pod> = pods
        .iter()
        .filter(|p| matches(selector, p) && (publish_not_ready || !p.terminating))
        .collect();
    listed.sort_by(|a, b| a.ip.cmp(&b.ip));
    let addresses: Vec<Value> = listed
        .iter()
        .map(|p| {
            json!({"ip": p.ip, "nodeName": p.node,
                   "targetRef": {"kind": "Pod", "namespace": "default", "name": p.name}})
        })
        .collect();
    let ports: Vec<Value> = target_ports(svc)
        .into_iter()
        .map(|(name, port, protocol)| {
            // EndpointPort.name is omitempty: a single unnamed port has none.
            let mut p = json!({"port": port, "protocol": protocol});
            if !name.is_empty() {
                p["name"] = json!(name);
            }
            p
        })
        .collect();
    let headless = svc["spec"]["clusterIP"] == "None";
    // A Service without ports gets addresses only when headless, as upstream.
    let has_subset = !addresses.is_empty() && (!ports.is_empty() || headless);
    let mut ep = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": name, "namespace": "default"},
    });
    if let Some(labels) = svc["metadata"]["labels"].as_object().filter(|l| !l.is_empty()) {
        ep["metadata"]["labels"] = json!(labels);
    }
    if has_subset {
        let mut subset = json!({"addresses": addresses});
        if !ports.is_empty() {
            subset["ports"] = json!(ports);
        }
        ep["subsets"] = json!([subset]);
    }
    Some(ep)
}

/// Whether the stored Endpoints `have` already says what `want` says (labels and subsets; the rest is
/// the API's own metadata).
fn same_endpoints(have: &Value, want: &Value) -> bool {
    let labels = |v: &Value| v["metadata"]["labels"].as_object().cloned().unwrap_or_default();
    let subsets = |v: &Value| v["subsets"].as_array().cloned().unwrap_or_default();
    labels(have) == labels(want) && subsets(have) == subsets(want)
}

/// Endpoints in `default` whose Service is gone: the endpoints controller deletes them, except the
/// ones old leader election kept in Endpoints (its annotation marks them).
fn orphans<'a>(endpoints: &'a [Value], services: &[Value]) -> Vec<&'a str> {
    endpoints
        .iter()
        .filter(|e| e["metadata"]["annotations"]["control-plane.alpha.kubernetes.io/leader"].is_null())
        .filter_map(|e| e["metadata"]["name"].as_str())
        .filter(|n| !services.iter().any(|s| s["metadata"]["name"] == *n))
        .collect()
}

impl Sync {
    pub fn tick(&mut self, st: &State) -> Result<()> {
        let svcs = http::json(
            "GET",
            &api_url("/api/v1/namespaces/default/services"),
            "application/json",
            None,
        )?;
        let svcs = svcs["items"].as_array().cloned().unwrap_or_default();
        for svc in &svcs {
            let Some(body) = slice(svc, &st.pods) else {
                continue;
            };
            let name = body["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            if self.written.get(&name) == Some(&body) {
                continue;
            }
            let base = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
            let created = http::json("POST", &api_url(base), "application/json", Some(&body));
            if created.is_err() {
                http::json(
                    "PUT",
                    &api_url(&format!("{base}/{name}")),
                    "application/json",
                    Some(&body),
                )?;
            }
            self.written.insert(name, body);
        }
        // After the slices: the proxies need those, kubectl these.
        sync_endpoints(&svcs, &st.pods)
    }
}

/// Sets `key` of the object `v` to `value`, or removes it (the API drops empty fields, so an absent
/// field and an empty one read back the same).
fn set_or_remove(v: &mut Value, key: &str, value: Option<&Value>) {
    if let Some(o) = v.as_object_mut() {
        match value {
            Some(x) => o.insert(key.to_owned(), x.clone()),
            None => o.remove(key),
        };
    }
}

/// Writes the v1 Endpoints that differ from what the API holds, and deletes the orphaned ones.
fn sync_endpoints(svcs: &[Value], pods: &[Pod]) -> Result<()> {
    let base = "/api/v1/namespaces/default/endpoints";
    let have = http::json("GET", &api_url(base), "application/json", None)?;
    let have = have["items"].as_array().cloned().unwrap_or_default();
    for svc in svcs {
        let Some(want) = endpoints(svc, pods) else {
            continue;
        };
        let name = want["metadata"]["name"].as_str().unwrap_or_default();
        match have.iter().find(|e| e["metadata"]["name"] == name) {
            None => {
                http::json("POST", &api_url(base), "application/json", Some(&want))?;
            }
            Some(old) if !same_endpoints(old, &want) => {
                // The stored object with our labels and subsets: its resourceVersion makes the
                // write conditional, a conflict is retried on the next tick.
                let mut body = old.clone();
                set_or_remove(&mut body["metadata"], "labels", want["metadata"].get("labels"));
                set_or_remove(&mut body, "subsets", want.get("subsets"));
                let url = api_url(&format!("{base}/{name}"));
                http::json("PUT", &url, "application/json", Some(&body))?;
            }
            Some(_) => {}
        }
    }
    for name in orphans(&have, svcs) {
        let url = api_url(&format!("{base}/{name}"));
        http::json("DELETE", &url, "application/json", None)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
