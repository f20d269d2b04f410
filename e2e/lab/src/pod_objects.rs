//! The lab's pods as v1 Pod objects in `default` (run by the VPC agent, beside the endpoint
//! controllers), so `kubectl get pod -o wide` lists them as on a real cluster. The agent plays the parts
//! that write them there: the ReplicaSet controller creates the Pod (`app=<app>`, one container
//! `serve-hostname` with its TCP and UDP port), the scheduler's binding is `spec.nodeName`, and the
//! kubelet reports the status through `/status` (Running, pod and host IPs, Ready).
//!
//! A pod being scaled down (`terminating` in the state) is DELETEd, and the lab's finalizer keeps the
//! object, with its deletionTimestamp (kubectl: `Terminating`), until the pod has left the state; then
//! the finalizer is removed and the API lets the object go. Any Pod carrying the finalizer that the
//! state no longer names is cleaned up the same way, also after an agent restart. What to write is
//! decided by comparing with what the API holds ([`plan`]), so only changes are written.

use std::collections::BTreeMap;

use anyhow::Result;
use serde_json::{Value, json};

use crate::cluster::api_url;
use crate::http;
use crate::state::{Node, Pod, State};

/// Marks the Pods the lab owns, and holds a deleted one until its pod is really gone.
pub const FINALIZER: &str = "svcnet.dev/lab-pod";
pub const CONTAINER: &str = "serve-hostname";
/// No image is pulled: the container is this binary's `serve-hostname` subcommand.
const IMAGE: &str = "svcnet-lab";
const PODS: &str = "/api/v1/namespaces/default/pods";

/// The Pod for `p` as its controller and the scheduler leave it (pure; the API adds the rest).
pub fn object(p: &Pod) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": p.name, "namespace": "default",
            "labels": {"app": p.app},
            "finalizers": [FINALIZER]
        },
        "spec": {
            "nodeName": p.node,
            "containers": [{
                "name": CONTAINER, "image": IMAGE,
                "args": ["serve-hostname", "--name", p.name, "--port", p.port.to_string()],
                "ports": [
                    {"containerPort": p.port, "protocol": "TCP"},
                    {"containerPort": p.port, "protocol": "UDP"}
                ]
            }],
            "restartPolicy": "Always"
        }
    })
}

/// The status the kubelet reports for `p` on the node with IP `host_ip`, running since `started`
/// (pure). A terminating pod keeps it: its server answers until the grace period ends.
pub fn status(p: &Pod, host_ip: &str, started: &str) -> Value {
    let cond = |ty: &str| json!({"type": ty, "status": "True", "lastTransitionTime": started});
    json!({
        "phase": "Running",
        "conditions": [
            cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"),
            cond("ContainersReady"), cond("PodScheduled")
        ],
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": p.ip, "podIPs": [{"ip": p.ip}],
        "startTime": started,
        "qosClass": "BestEffort",
        "containerStatuses": [{
            "name": CONTAINER, "image": IMAGE, "ready": true, "started": true, "restartCount": 0,
            "state": {"running": {"startedAt": started}}
        }]
    })
}

/// One write to the API.
#[derive(Debug, PartialEq)]
pub enum Write {
    /// POST a new Pod; its status follows on the next tick, dated by the creationTimestamp the API gave.
    Create(Value),
    /// PUT `/status`: the stored Pod (its resourceVersion makes the write conditional) with a new status.
    Status(Value),
    /// DELETE: the pod is terminating, or gone from the state; the finalizer keeps the object for now.
    Delete(String),
    /// PUT: the stored, deleted Pod without the lab's finalizer, so the API removes it.
    Release(Value),
}

fn ours(o: &Value) -> bool {
    o["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == FINALIZER))
}

fn deleting(o: &Value) -> bool {
    !o["metadata"]["deletionTimestamp"].is_null()
}

/// What to write so the API's Pods (`observed`, every Pod of `default`) show the state's `pods` on
/// `nodes` (pure). Pods without the lab's finalizer are someone else's and left alone.
pub fn plan(pods: &[Pod], nodes: &[Node], observed: &[Value]) -> Vec<Write> {
    let have: BTreeMap<&str, &Value> = observed
        .iter()
        .filter(|o| ours(o))
        .filter_map(|o| Some((o["metadata"]["name"].as_str()?, o)))
        .collect();
    let mut out = Vec::new();
    for p in pods {
        // A pod whose node is not (or no longer) in the state is on its way out.
        let Some(node) = nodes.iter().find(|n| n.name == p.node) else {
            continue;
        };
        let Some(o) = have.get(p.name.as_str()) else {
            // Created only while it runs: a terminating pod without object stays without.
            if !p.terminating {
                out.push(Write::Create(object(p)));
            }
            continue;
        };
        if let Some(started) = o["metadata"]["creationTimestamp"].as_str() {
            let want = status(p, &node.ip, started);
            if o["status"] != want {
                let mut body = (*o).clone();
                body["status"] = want;
                out.push(Write::Status(body));
            }
        }
        if p.terminating && !deleting(o) {
            out.push(Write::Delete(p.name.clone()));
        }
    }
    for (name, o) in &have {
        if pods.iter().any(|p| p.name == *name) {
            continue;
        }
        if deleting(o) {
            let mut body = (*o).clone();
            let rest: Vec<Value> = o["metadata"]["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| *f != FINALIZER)
                .cloned()
                .collect();
            body["metadata"]["finalizers"] = json!(rest);
            out.push(Write::Release(body));
        } else {
            // Deleted first, released on the next tick: it passes through Terminating as a real pod would.
            out.push(Write::Delete((*name).to_owned()));
        }
    }
    out
}

/// One pass: lists the Pods of `default` and makes the writes [`plan`] asks for. A failed write is
/// reported and retried on the next tick; the others still go.
pub fn tick(st: &State) -> Result<()> {
    let list = http::json("GET", &api_url(PODS), "application/json", None)?;
    let observed = list["items"].as_array().cloned().unwrap_or_default();
    for w in plan(&st.pods, &st.nodes, &observed) {
        let name = |v: &Value| v["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let res = match &w {
            Write::Create(body) => http::json("POST", &api_url(PODS), "application/json", Some(body)),
            Write::Status(body) => {
                let url = api_url(&format!("{PODS}/{}/status", name(body)));
                http::json("PUT", &url, "application/json", Some(body))
            }
            Write::Delete(n) => http::json(
                "DELETE",
                &api_url(&format!("{PODS}/{n}")),
                "application/json",
                None,
            ),
            Write::Release(body) => {
                let url = api_url(&format!("{PODS}/{}", name(body)));
                http::json("PUT", &url, "application/json", Some(body))
            }
        };
        if let Err(e) = res {
            eprintln!("pods: {e:#}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
