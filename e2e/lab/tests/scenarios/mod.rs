//! Scenario code: what each e2e step does and asserts, written against [`Cluster`] only (no namespace
//! or process detail).
#![allow(clippy::unwrap_used, dead_code)]

pub mod basics;
pub mod families;
pub mod internal;
pub mod internal_mixed;
pub mod ipv6;
pub mod ipv6_ilb;
pub mod ipv6_rbs;
pub mod lifecycle;
pub mod rbs;
pub mod rbs_mixed;
pub mod takeover;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Cluster, From, api, wait_for};

pub const SVCS: &str = "/api/v1/namespaces/default/services";

pub fn svc_path(name: &str) -> String {
    format!("{SVCS}/{name}")
}

/// Creates Service `name` selecting `app=<app>` with `spec` merged in; labelled `app=<app>` as
/// `kubectl expose` labels it, so `-l app=<app>` selects it (and the Endpoints that copy its labels).
pub fn create_svc(c: &dyn Cluster, name: &str, app: &str, spec: Value) -> Value {
    let mut body = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"selector": {"app": app}}});
    for (k, v) in spec.as_object().unwrap() {
        body["spec"][k] = v.clone();
    }
    api(c, "POST", SVCS, Some(&body))
}

pub fn patch_svc(c: &dyn Cluster, name: &str, patch: Value) -> Value {
    api(c, "PATCH", &svc_path(name), Some(&patch))
}

/// Waits for the Service's LB ingress IP.
pub fn lb_ip(c: &dyn Cluster, name: &str) -> String {
    wait_for(
        &format!("an ingress IP for {name}"),
        Duration::from_secs(90),
        || {
            let s = c.api("GET", &svc_path(name), None).ok()?;
            s["status"]["loadBalancer"]["ingress"][0]["ip"]
                .as_str()
                .map(str::to_owned)
        },
    )
}

/// The GCE name of a Service's load balancer: "a" + uid without dashes, cut to 32.
pub fn lb_name(c: &dyn Cluster, name: &str) -> String {
    let s = api(c, "GET", &svc_path(name), None);
    let uid = s["metadata"]["uid"].as_str().unwrap().replace('-', "");
    format!("a{uid}").chars().take(32).collect()
}

/// Distinct answers of `n` GETs of `url` from `from` (failures count as "<none>").
pub fn answers(c: &dyn Cluster, from: From<'_>, url: &str, n: usize) -> BTreeSet<String> {
    (0..n)
        .map(|_| c.get(from, url).unwrap_or_else(|| "<none>".into()))
        .collect()
}

/// Waits until GETs of `url` from `from` have returned every name in `want`.
pub fn wait_all_answer(c: &dyn Cluster, from: From<'_>, url: &str, want: usize) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    wait_for(
        &format!("{want} distinct answers from {url} ({from:?})"),
        Duration::from_secs(30),
        || {
            if let Some(name) = c.get(from, url) {
                seen.insert(name);
            }
            (seen.len() >= want).then_some(())
        },
    );
    seen
}

/// Waits until `url` answers from `from`; the answer.
pub fn wait_answer(c: &dyn Cluster, from: From<'_>, url: &str) -> String {
    wait_for(
        &format!("{url} to answer ({from:?})"),
        Duration::from_secs(30),
        || c.get(from, url),
    )
}

/// Names of the pods of `app` (as the EndpointSlices list them).
pub fn pod_names(c: &dyn Cluster, svc: &str) -> BTreeSet<String> {
    let slices = api(
        c,
        "GET",
        &format!(
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io/service-name={svc}"
        ),
        None,
    );
    slices["items"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .filter_map(|e| e["targetRef"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// The tables of a `kubectl get` output (one per kind, separated by blank lines), each row as header ->
/// cell. Cells are cut at the columns where the header's words start after 2+ spaces (kubectl pads
/// columns with 3), so a header with a space (`NOMINATED NODE`) stays one column.
pub fn kubectl_tables(out: &str) -> Vec<Vec<BTreeMap<String, String>>> {
    out.split("\n\n")
        .filter(|t| !t.trim().is_empty())
        .map(|t| {
            let mut lines = t.lines();
            let header = lines.next().unwrap_or_default();
            let b = header.as_bytes();
            let starts: Vec<usize> = (0..b.len())
                .filter(|&i| b[i] != b' ' && (i == 0 || (i >= 2 && b[i - 1] == b' ' && b[i - 2] == b' ')))
                .collect();
            let cut = |line: &str, k: usize| {
                let end = starts.get(k + 1).copied().unwrap_or(line.len()).min(line.len());
                line.get(starts[k].min(end)..end)
                    .unwrap_or_default()
                    .trim()
                    .to_owned()
            };
            let names: Vec<String> = (0..starts.len()).map(|k| cut(header, k)).collect();
            lines
                .map(|l| {
                    names
                        .iter()
                        .enumerate()
                        .map(|(k, n)| (n.clone(), cut(l, k)))
                        .collect()
                })
                .collect()
        })
        .collect()
}
