//! The lab's apps as apps/v1 Deployments in `default` (run by the VPC agent), so the walkthrough's
//! `kubectl expose deployment hostnames --port=80 --target-port=9376` works as written: kubectl reads
//! the Deployment's selector and labels (`app=<app>`) and creates a Service with an unnamed port, the
//! the walkthrough's shape (`default/hostnames` -> KUBE-SVC-YN5D6RYVEVZOH44Q in today's kube-proxy).
//!
//! The lab's pods are network namespaces made by `svcnet-lab run`/`scale`, not by a controller
//! watching Deployments, so the agent mirrors them instead: `spec.replicas` is the number of pods of
//! the app that are not terminating, the status says they are all ready. Deployments it made carry
//! [`OWNED`] and go when their app has no pod left; others are left alone. Pure planning ([`plan`]),
//! then the writes ([`tick`]).

use std::collections::BTreeMap;

use anyhow::Result;
use serde_json::{Value, json};

use crate::cluster::api_url;
use crate::http;
use crate::pod_objects::CONTAINER;
use crate::state::{Pod, State};

/// Annotation on the Deployments the agent mirrors (not a label: `kubectl expose` copies labels onto
/// the Service).
pub const OWNED: &str = "svcnet.dev/lab-mirror";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

/// An app as the state has it: its port and how many of its pods are not terminating.
#[derive(Debug, PartialEq)]
pub struct App {
    pub port: u16,
    pub replicas: usize,
}

/// The apps of the state's pods, by name (pure).
pub fn apps(pods: &[Pod]) -> BTreeMap<String, App> {
    let mut out: BTreeMap<String, App> = BTreeMap::new();
    for p in pods {
        let app = out.entry(p.app.clone()).or_insert(App {
            port: p.port,
            replicas: 0,
        });
        if !p.terminating {
            app.replicas += 1;
        }
    }
    out
}

/// The Deployment for `name` (pure): what `kubectl create deployment` would have made, with the
/// lab's container.
pub fn object(name: &str, app: &App) -> Value {
    let labels = json!({"app": name});
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": name, "namespace": "default", "labels": labels,
            "annotations": {OWNED: "pods are svcnet-lab namespaces: svcnet-lab scale"}
        },
        "spec": {
            "replicas": app.replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{
                    "name": CONTAINER, "image": "svcnet-lab",
                    "ports": [
                        {"containerPort": app.port, "protocol": "TCP"},
                        {"containerPort": app.port, "protocol": "UDP"}
                    ]
                }]}
            }
        }
    })
}

/// The status a Deployment controller reports once `replicas` pods are up (pure).
pub fn status(replicas: usize, generation: i64) -> Value {
    json!({
        "observedGeneration": generation,
        "replicas": replicas, "updatedReplicas": replicas,
        "readyReplicas": replicas, "availableReplicas": replicas,
        "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]
    })
}

/// One write to the API.
#[derive(Debug, PartialEq)]
pub enum Write {
    Create(Value),
    /// PUT of the stored object with a new `spec.replicas`.
    Scale(Value),
    /// PUT `/status` of the stored object.
    Status(Value),
    Delete(String),
}

fn owned(o: &Value) -> bool {
    !o["metadata"]["annotations"][OWNED].is_null()
}

/// What to write so the API's Deployments (`observed`) mirror the state's `pods` (pure).
pub fn plan(pods: &[Pod], observed: &[Value]) -> Vec<Write> {
    let want = apps(pods);
    let have: BTreeMap<&str, &Value> = observed
        .iter()
        .filter_map(|o| Some((o["metadata"]["name"].as_str()?, o)))
        .collect();
    let mut out = Vec::new();
    for (name, app) in &want {
        let Some(o) = have.get(name.as_str()) else {
            out.push(Write::Create(object(name, app)));
            continue;
        };
        if !owned(o) {
            continue; // someone else's Deployment of the same name
        }
        if o["spec"]["replicas"].as_u64() != Some(app.replicas as u64) {
            let mut body = (*o).clone();
            body["spec"]["replicas"] = json!(app.replicas);
            out.push(Write::Scale(body));
            continue; // the status follows the new generation on the next tick
        }
        let generation = o["metadata"]["generation"].as_i64().unwrap_or(1);
        let want_status = status(app.replicas, generation);
        if o["status"] != want_status {
            let mut body = (*o).clone();
            body["status"] = want_status;
            out.push(Write::Status(body));
        }
    }
    for (name, o) in &have {
        if owned(o) && !want.contains_key(*name) {
            out.push(Write::Delete((*name).to_owned()));
        }
    }
    out
}

/// One pass: lists the Deployments of `default` and makes the writes [`plan`] asks for; a failed write
/// is reported and retried on the next tick.
pub fn tick(st: &State) -> Result<()> {
    let list = http::json("GET", &api_url(DEPLOYMENTS), "application/json", None)?;
    let observed = list["items"].as_array().cloned().unwrap_or_default();
    for w in plan(&st.pods, &observed) {
        let name = |v: &Value| v["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let one = |n: &str| api_url(&format!("{DEPLOYMENTS}/{n}"));
        let res = match &w {
            Write::Create(b) => http::json("POST", &api_url(DEPLOYMENTS), "application/json", Some(b)),
            Write::Scale(b) => http::json("PUT", &one(&name(b)), "application/json", Some(b)),
            Write::Status(b) => {
                let url = format!("{}/status", one(&name(b)));
                http::json("PUT", &url, "application/json", Some(b))
            }
            Write::Delete(n) => http::json("DELETE", &one(n), "application/json", None),
        };
        if let Err(e) = res {
            eprintln!("deployments: {e:#}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
