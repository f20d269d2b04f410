//! The agent as the lab nodes' kubelets, and as a tiny scheduler (no kube-scheduler is built).
//!
//! Every tick (the agent's 500 ms loop) it lists Nodes and Pods through `kubectl proxy` and:
//! - **leases and Ready**: every 10 s per lab node, renews the node's Lease in `kube-node-lease`
//!   (holder = the node, 40 s, owned by the Node so the garbage collector removes it with the node) and
//!   posts the node's `Ready` condition (strategic merge: the route controller's `NetworkUnavailable`
//!   stays);
//! - **schedules** Pods without `spec.nodeName` (not being deleted) to the untainted lab node with the
//!   fewest Pods, through the `binding` subresource as kube-scheduler does;
//! - **runs** the Pods bound to its nodes: the pod's namespace on the node's bridge with the next free IP
//!   of the node's podCIDR, the hostname server on the container's first port (9376 without one), then
//!   the status through `/status`: Running, podIP(s), hostIP, Ready/ContainersReady/... True, the
//!   container running and ready with 0 restarts. Only serve_hostname images run ([`runs_image`]); others
//!   stay Pending with `ErrImagePull`, as a node that cannot pull them would show;
//! - **terminates** a Pod with a deletionTimestamp: it keeps serving (the EndpointSlice controller lists
//!   it as a terminating, serving, not-ready endpoint) for its grace period, at most [`DRAIN`] (the lab's
//!   stand-in for an app draining on SIGTERM), then its server is killed and reaped, its namespace goes,
//!   and the kubelet confirms the deletion with grace period 0, as the real one does once the containers
//!   stopped;
//! - **cleans up** the servers and namespaces of Pods that no longer exist (deleted with grace 0, or by
//!   `remove-node`).
//!
//! What it runs is recorded in `<dir>/kubelet.json` ([`crate::pod_record`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::api_time::{rfc3339, rfc3339_micro};
use crate::kube::{Api, STRATEGIC};
use crate::pod_record::{RunningPod, load, save};
use crate::pods;
use crate::state::{Node, State};

/// The most a terminating pod keeps serving.
pub const DRAIN: Duration = Duration::from_secs(2);
/// How often the Leases and the Ready condition are renewed (the kubelet's default lease renewal is
/// 10 s of a 40 s lease).
const HEARTBEAT: Duration = Duration::from_secs(10);
const LEASE_SECONDS: u64 = 40;
/// serve_hostname's port, for a container that declares none.
const DEFAULT_PORT: u16 = 9376;

/// Whether the lab runs this image: serve_hostname under any registry and tag
/// (`gcr.io/google_containers/serve_hostname` as in the walkthrough, `registry.k8s.io/serve_hostname:1.4`).
pub fn runs_image(image: &str) -> bool {
    let last = image.rsplit('/').next().unwrap_or(image);
    let name = last.split(['@', ':']).next().unwrap_or(last);
    name == "serve_hostname" || name == "serve-hostname"
}

/// The lowest host address of `cidr` after the bridge's (the first host) that `used` does not hold.
pub fn free_ip(cidr: &str, used: &BTreeSet<Ipv4Addr>) -> Option<Ipv4Addr> {
    let net: ipnet::Ipv4Net = cidr.parse().ok()?;
    net.hosts().skip(1).find(|ip| !used.contains(ip))
}

/// Among `candidates` (in order), the one with the fewest pods in `load`; ties go to the first.
pub fn pick_node<'a>(candidates: &[&'a str], load: &BTreeMap<String, usize>) -> Option<&'a str> {
    candidates
        .iter()
        .min_by_key(|n| load.get(**n).copied().unwrap_or(0))
        .copied()
}

/// The node's Ready condition as the kubelet posts it.
pub fn ready_condition(heartbeat: &str, since: &str) -> Value {
    json!({
        "type": "Ready", "status": "True", "reason": "KubeletReady",
        "message": "svcnet-lab agent is posting ready status",
        "lastHeartbeatTime": heartbeat, "lastTransitionTime": since
    })
}

/// The status the kubelet reports for a running pod (pure).
pub fn running_status(p: &RunningPod, container: &str, image: &str, host_ip: &str, started: &str) -> Value {
    let cond = |ty: &str| json!({"type": ty, "status": "True", "lastTransitionTime": started});
    json!({
        "phase": "Running",
        "conditions": [
            cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"),
            cond("ContainersReady"), cond("PodScheduled")
        ],
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": p.ip.to_string(), "podIPs": p.pod_ips(),
        "startTime": started,
        "containerStatuses": [{
            "name": container, "image": image, "imageID": "",
            "containerID": format!("svcnet-lab://{}", p.netns),
            "ready": true, "started": true, "restartCount": 0,
            "state": {"running": {"startedAt": started}}
        }]
    })
}

fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter().fold(v, |v, k| &v[*k]).as_str().unwrap_or_default()
}

/// The kubelets' memory between ticks.
#[derive(Default)]
pub struct Kubelet {
    running: Vec<RunningPod>,
    /// uid -> when the agent saw its deletion.
    terminating: BTreeMap<String, Instant>,
    last_heartbeat: Option<Instant>,
    /// Pods already told their image cannot run.
    refused: BTreeSet<String>,
    /// uid -> the pod's server this agent started, to reap when the pod goes.
    children: BTreeMap<String, Child>,
}

impl Kubelet {
    pub fn new(dir: &Path) -> Kubelet {
        Kubelet {
            running: load(dir),
            ..Kubelet::default()
        }
    }

    pub fn tick(&mut self, dir: &Path, st: &State, api: &Api) -> Result<()> {
        let nodes = api.get("/api/v1/nodes")?;
        let nodes = nodes["items"].as_array().cloned().unwrap_or_default();
        let pods = api.get("/api/v1/pods")?;
        let pods = pods["items"].as_array().cloned().unwrap_or_default();
        if self.last_heartbeat.is_none_or(|t| t.elapsed() >= HEARTBEAT) {
            self.heartbeat(st, &nodes, api);
            self.last_heartbeat = Some(Instant::now());
        }
        schedule(st, &nodes, &pods, api);
        self.sync(dir, st, &pods, api)
    }

    fn heartbeat(&self, st: &State, nodes: &[Value], api: &Api) {
        let now = SystemTime::now();
        for node in nodes {
            let name = s(node, &["metadata", "name"]);
            if !st.nodes.iter().any(|n| n.name == name) {
                continue;
            }
            let lease = json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": "kube-node-lease", "ownerReferences": [{
                    "apiVersion": "v1", "kind": "Node", "name": name, "uid": s(node, &["metadata", "uid"])
                }]},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS,
                         "renewTime": rfc3339_micro(now)}
            });
            let path = format!(
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}?fieldManager=svcnet-lab-kubelet&force=true"
            );
            if let Err(e) = api.call_as("PATCH", &path, "application/apply-patch+yaml", Some(&lease)) {
                eprintln!("kubelet: lease of {name}: {e:#}");
            }
            let stamp = rfc3339(now);
            let since = node["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == "Ready" && c["status"] == "True")
                .and_then(|c| c["lastTransitionTime"].as_str())
                .unwrap_or(&stamp)
                .to_owned();
            let patch = json!({"status": {"conditions": [ready_condition(&stamp, &since)]}});
            if let Err(e) = api.call_as(
                "PATCH",
                &format!("/api/v1/nodes/{name}/status"),
                STRATEGIC,
                Some(&patch),
            ) {
                eprintln!("kubelet: Ready of {name}: {e:#}");
            }
        }
    }

    fn sync(&mut self, dir: &Path, st: &State, pods: &[Value], api: &Api) -> Result<()> {
        let live: BTreeSet<&str> = pods.iter().map(|p| s(p, &["metadata", "uid"])).collect();
        // Pods gone from the API (confirmed deleted, or removed with their node).
        let gone: Vec<RunningPod> = self
            .running
            .iter()
            .filter(|r| !live.contains(r.uid.as_str()))
            .cloned()
            .collect();
        for r in gone {
            self.teardown(dir, &r)?;
        }
        for p in pods {
            let node_name = s(p, &["spec", "nodeName"]);
            let Some(node) = st.nodes.iter().find(|n| n.name == node_name) else {
                continue;
            };
            let uid = s(p, &["metadata", "uid"]).to_owned();
            let deleting = !p["metadata"]["deletionTimestamp"].is_null();
            let running = self.running.iter().find(|r| r.uid == uid).cloned();
            match (deleting, running) {
                (false, None) => {
                    let phase = s(p, &["status", "phase"]);
                    if phase == "Succeeded" || phase == "Failed" {
                        continue;
                    }
                    if let Err(e) = self.start(dir, st, node, p, api) {
                        eprintln!("kubelet: start {}: {e:#}", s(p, &["metadata", "name"]));
                    }
                }
                (false, Some(r)) => {
                    let reported = s(p, &["status", "podIP"]) == r.ip.to_string()
                        && s(p, &["status", "phase"]) == "Running";
                    if !reported {
                        report(api, p, &r, node)?;
                    }
                }
                (true, Some(r)) => {
                    let seen = *self.terminating.entry(uid.clone()).or_insert_with(Instant::now);
                    if !r.terminating {
                        self.mark_terminating(dir, &uid)?;
                    }
                    let grace = p["metadata"]["deletionGracePeriodSeconds"]
                        .as_u64()
                        .map_or(DRAIN, |g| Duration::from_secs(g).min(DRAIN));
                    if seen.elapsed() >= grace {
                        self.teardown(dir, &r)?;
                        confirm_deleted(api, p)?;
                    }
                }
                (true, None) => confirm_deleted(api, p)?,
            }
        }
        Ok(())
    }

    fn mark_terminating(&mut self, dir: &Path, uid: &str) -> Result<()> {
        for r in self.running.iter_mut().filter(|r| r.uid == uid) {
            r.terminating = true;
        }
        save(dir, &self.running)
    }

    fn start(&mut self, dir: &Path, st: &State, node: &Node, p: &Value, api: &Api) -> Result<()> {
        let uid = s(p, &["metadata", "uid"]).to_owned();
        let name = s(p, &["metadata", "name"]).to_owned();
        let c = &p["spec"]["containers"][0];
        let image = s(c, &["image"]);
        if !runs_image(image) {
            if self.refused.insert(uid) {
                let status = json!({"status": {
                    "phase": "Pending", "hostIP": node.ip,
                    "containerStatuses": [{
                        "name": s(c, &["name"]), "image": image, "imageID": "", "ready": false,
                        "restartCount": 0, "state": {"waiting": {"reason": "ErrImagePull",
                            "message": format!("svcnet-lab runs only serve_hostname images, not {image}")}}
                    }]
                }});
                api.call("PATCH", &pod_path(p, "/status"), Some(&status))?;
            }
            return Ok(());
        }
        let port = c["ports"][0]["containerPort"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or(DEFAULT_PORT);
        let used: BTreeSet<Ipv4Addr> = self
            .running
            .iter()
            .filter(|r| r.node == node.name)
            .map(|r| r.ip)
            .collect();
        let ip = free_ip(&node.pod_cidr, &used)
            .with_context(|| format!("no free address in {} of {}", node.pod_cidr, node.name))?;
        let short: String = uid.chars().filter(|c| *c != '-').take(8).collect();
        let r = RunningPod {
            uid,
            namespace: s(p, &["metadata", "namespace"]).to_owned(),
            name: name.clone(),
            app: s(p, &["metadata", "labels", "app"]).to_owned(),
            node: node.name.clone(),
            netns: format!("{}-pod-{short}", st.prefix),
            link: format!("p{short}"),
            ip,
            ip6: node.pod_ip6_of(ip),
            port,
            terminating: false,
            server: None,
        };
        // Recorded first, so a failure half-way is cleaned up like any other pod.
        self.running.push(r.clone());
        save(dir, &self.running)?;
        let server = pods::start(dir, node, &r.netns, &r.link, (ip, r.ip6), &name, port)?;
        self.children.insert(r.uid.clone(), server.child);
        // Saved at once: whoever tears the pod down finds its server by this, not by its namespace.
        for x in self.running.iter_mut().filter(|x| x.uid == r.uid) {
            x.server = Some(server.process);
        }
        save(dir, &self.running)?;
        report(api, p, &r, node)
    }

    fn teardown(&mut self, dir: &Path, r: &RunningPod) -> Result<()> {
        pods::stop(&r.netns, r.server, self.children.remove(&r.uid))?;
        self.running.retain(|x| x.uid != r.uid);
        self.terminating.remove(&r.uid);
        save(dir, &self.running)
    }
}

fn pod_path(p: &Value, sub: &str) -> String {
    format!(
        "/api/v1/namespaces/{}/pods/{}{sub}",
        s(p, &["metadata", "namespace"]),
        s(p, &["metadata", "name"])
    )
}

/// Posts the running pod's status (dated by the Pod's creation, as its start).
fn report(api: &Api, p: &Value, r: &RunningPod, node: &Node) -> Result<()> {
    let c = &p["spec"]["containers"][0];
    let started = s(p, &["metadata", "creationTimestamp"]);
    let status = running_status(r, s(c, &["name"]), s(c, &["image"]), &node.ip, started);
    api.call(
        "PATCH",
        &pod_path(p, "/status"),
        Some(&json!({ "status": status })),
    )?;
    Ok(())
}

/// The kubelet's final delete: grace period 0, only for this very Pod (uid precondition).
fn confirm_deleted(api: &Api, p: &Value) -> Result<()> {
    let body = json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
        "preconditions": {"uid": s(p, &["metadata", "uid"])}});
    match api.call("DELETE", &pod_path(p, ""), Some(&body)) {
        // Already gone: someone else finished it.
        Err(e) if e.to_string().contains(": 404 ") => Ok(()),
        other => other.map(drop),
    }
}

/// Binds each unscheduled Pod to the untainted lab node with the fewest Pods.
fn schedule(st: &State, nodes: &[Value], pods: &[Value], api: &Api) {
    let ready: Vec<&str> = st
        .nodes
        .iter()
        .filter(|n| {
            nodes.iter().any(|o| {
                s(o, &["metadata", "name"]) == n.name
                    && o["metadata"]["deletionTimestamp"].is_null()
                    && !s(o, &["spec", "podCIDR"]).is_empty()
                    && !o["spec"]["taints"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|t| t["effect"] == "NoSchedule" || t["effect"] == "NoExecute")
            })
        })
        .map(|n| n.name.as_str())
        .collect();
    let mut load: BTreeMap<String, usize> = BTreeMap::new();
    for p in pods {
        let node = s(p, &["spec", "nodeName"]);
        if !node.is_empty() {
            *load.entry(node.to_owned()).or_default() += 1;
        }
    }
    for p in pods {
        let ours = matches!(s(p, &["spec", "schedulerName"]), "" | "default-scheduler");
        if !ours || !s(p, &["spec", "nodeName"]).is_empty() || !p["metadata"]["deletionTimestamp"].is_null() {
            continue;
        }
        let Some(node) = pick_node(&ready, &load) else {
            return;
        };
        let binding = json!({"apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": s(p, &["metadata", "name"])},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}});
        match api.call("POST", &pod_path(p, "/binding"), Some(&binding)) {
            Ok(_) => *load.entry(node.to_owned()).or_default() += 1,
            Err(e) => eprintln!("scheduler: bind {}: {e:#}", s(p, &["metadata", "name"])),
        }
    }
}

#[cfg(test)]
mod tests;
