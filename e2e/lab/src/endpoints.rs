//! The endpoint controller of the lab (run by the VPC agent): for every Service in `default` with a
//! selector, one EndpointSlice `<service>-lab` listing the lab pods whose labels (`app=<name>`) match,
//! with their node names and conditions (ready + serving; a pod being deleted is terminating: not
//! ready, still serving, as the endpoint-slice controller reports it); written only when it changes.

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

/// The slice for `svc` over `pods` (pure).
pub fn slice(svc: &Value, pods: &[Pod]) -> Option<Value> {
    let name = svc["metadata"]["name"].as_str()?;
    let selector = svc["spec"]["selector"].as_object()?;
    let ports: Vec<Value> = svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let port = p["targetPort"].as_u64().or(p["port"].as_u64()).unwrap_or(0);
            json!({"name": p["name"].as_str().unwrap_or(""), "port": port,
                   "protocol": p["protocol"].as_str().unwrap_or("TCP")})
        })
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

impl Sync {
    pub fn tick(&mut self, st: &State) -> Result<()> {
        let svcs = http::json(
            "GET",
            &api_url("/api/v1/namespaces/default/services"),
            "application/json",
            None,
        )?;
        for svc in svcs["items"].as_array().into_iter().flatten() {
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
        Ok(())
    }
}

#[cfg(test)]
mod tests;
