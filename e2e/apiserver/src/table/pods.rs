//! kubectl's columns for pods and the endpoints that list them (v1 Endpoints, EndpointSlices), after
//! upstream's printPod, formatEndpoints and the discovery printers (read for behaviour): READY counts
//! ready running containers, STATUS is the phase unless a container or a deletion says otherwise,
//! RESTARTS adds "(X ago)" after a restart, endpoint lists show at most 3 items then how many more.
//! Init containers are not considered (no kubelet runs any here).

use serde_json::{Value, json};

use super::{Col, col, s};
use crate::resources::ResourceType;
use crate::time::{human_age, parse_rfc3339};

fn items<'a>(o: &'a Value, p: &str) -> &'a [Value] {
    o.pointer(p).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn or_none(v: String) -> Value {
    json!(if v.is_empty() { "<none>".to_string() } else { v })
}

/// READY, STATUS and RESTARTS of a pod.
pub(super) struct PodSummary {
    pub ready: String,
    pub status: String,
    pub restarts: String,
}

pub(super) fn summary(o: &Value) -> PodSummary {
    let mut reason = s(o, "/status/reason");
    if reason.is_empty() {
        reason = s(o, "/status/phase");
    }
    let (mut restarts, mut ready) = (0, 0);
    let mut last_restart: Option<i64> = None;
    let mut has_running = false;
    // Upstream walks them last to first, so the first container's reason wins.
    for c in items(o, "/status/containerStatuses").iter().rev() {
        restarts += c.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
        if let Some(t) = parse_rfc3339(&s(c, "/lastState/terminated/finishedAt")) {
            last_restart = last_restart.max(Some(t));
        }
        let waiting = s(c, "/state/waiting/reason");
        let terminated = c.pointer("/state/terminated");
        if !waiting.is_empty() {
            reason = waiting;
        } else if let Some(t) = terminated {
            reason = match (s(t, "/reason"), t.get("signal").and_then(Value::as_i64)) {
                (r, _) if !r.is_empty() => r,
                (_, Some(sig)) if sig != 0 => format!("Signal:{sig}"),
                _ => format!(
                    "ExitCode:{}",
                    t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)
                ),
            };
        } else if c.get("ready").and_then(Value::as_bool) == Some(true)
            && c.pointer("/state/running").is_some()
        {
            has_running = true;
            ready += 1;
        }
    }
    if reason == "Completed" && has_running {
        let pod_ready = items(o, "/status/conditions")
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
    }
    if o.pointer("/metadata/deletionTimestamp").is_some() {
        reason = if s(o, "/status/reason") == "NodeLost" {
            "Unknown"
        } else {
            "Terminating"
        }
        .to_string();
    }
    let restarts = match last_restart {
        Some(t) => format!("{restarts} ({} ago)", human_age(t)),
        None => restarts.to_string(),
    };
    PodSummary {
        ready: format!("{ready}/{}", items(o, "/spec/containers").len()),
        status: reason,
        restarts,
    }
}

fn pod_ip(o: &Value) -> Value {
    // podIPs first, as upstream; podIP for objects written with only the older field.
    let ip = items(o, "/status/podIPs")
        .first()
        .map(|p| s(p, "/ip"))
        .unwrap_or_else(|| s(o, "/status/podIP"));
    or_none(ip)
}

fn readiness_gates(o: &Value) -> Value {
    let gates = items(o, "/spec/readinessGates");
    if gates.is_empty() {
        return json!("<none>");
    }
    let conditions = items(o, "/status/conditions");
    let met = gates
        .iter()
        .filter(|g| {
            conditions
                .iter()
                .find(|c| c.get("type") == g.get("conditionType"))
                .is_some_and(|c| c["status"] == "True")
        })
        .count();
    json!(format!("{met}/{}", gates.len()))
}

/// At most 3 items, then ` + N more...`; `empty` when there are none.
fn at_most_three(all: &[String], empty: &str) -> String {
    const MAX: usize = 3;
    if all.is_empty() {
        return empty.to_string();
    }
    let shown = all.iter().take(MAX).cloned().collect::<Vec<_>>().join(",");
    if all.len() > MAX {
        format!("{shown} + {} more...", all.len() - MAX)
    } else {
        shown
    }
}

/// An EndpointSlice's PORTS: each port's number (its name without one, `*` without either).
fn slice_ports(o: &Value) -> Value {
    let ports: Vec<String> = items(o, "/ports")
        .iter()
        .map(|p| {
            match (
                p.get("port").and_then(Value::as_i64),
                p.get("name").and_then(Value::as_str),
            ) {
                (Some(n), _) => n.to_string(),
                (None, Some(name)) => name.to_string(),
                (None, None) => "*".to_string(),
            }
        })
        .collect();
    json!(at_most_three(&ports, "<unset>"))
}

/// An EndpointSlice's ENDPOINTS: every address of every endpoint (conditions do not matter).
fn slice_endpoints(o: &Value) -> Value {
    let addrs: Vec<String> = items(o, "/endpoints")
        .iter()
        .flat_map(|e| items(e, "/addresses"))
        .filter_map(|a| a.as_str().map(String::from))
        .collect();
    json!(at_most_three(&addrs, "<unset>"))
}

/// The ENDPOINTS cell: `ip:port` for every port of every subset (the bare IP when a subset has no
/// ports), at most 3 then ` + N more...`; `<none>` without subsets. Not-ready addresses are not shown.
pub(super) fn endpoints_cell(o: &Value) -> Value {
    let subsets = items(o, "/subsets");
    if subsets.is_empty() {
        return json!("<none>");
    }
    let mut all = Vec::new();
    for ss in subsets {
        let addrs = items(ss, "/addresses");
        let ports = items(ss, "/ports");
        if ports.is_empty() {
            all.extend(addrs.iter().map(|a| s(a, "/ip")));
        }
        for p in ports {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            all.extend(addrs.iter().map(|a| {
                let ip = s(a, "/ip");
                // net.JoinHostPort: brackets around IPv6 addresses.
                if ip.contains(':') {
                    format!("[{ip}]:{port}")
                } else {
                    format!("{ip}:{port}")
                }
            }));
        }
    }
    // Subsets holding only not-ready addresses leave the cell empty, as upstream.
    json!(at_most_three(&all, ""))
}

/// Columns for pods, endpoints and endpoint slices, None for other kinds.
pub(super) fn cols(rt: &ResourceType) -> Option<Vec<Col>> {
    if rt.crd.is_some() {
        return None;
    }
    Some(match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => vec![
            col("Ready", "string", 0, |o| json!(summary(o).ready)),
            col("Status", "string", 0, |o| json!(summary(o).status)),
            // A string upstream too: it carries the "(X ago)" of the last restart.
            col("Restarts", "string", 0, |o| json!(summary(o).restarts)),
            col("IP", "string", 1, pod_ip),
            col("Node", "string", 1, |o| or_none(s(o, "/spec/nodeName"))),
            col("Nominated Node", "string", 1, |o| {
                or_none(s(o, "/status/nominatedNodeName"))
            }),
            col("Readiness Gates", "string", 1, readiness_gates),
        ],
        ("", "endpoints") => vec![col("Endpoints", "string", 0, endpoints_cell)],
        ("discovery.k8s.io", "endpointslices") => vec![
            col("AddressType", "string", 0, |o| json!(s(o, "/addressType"))),
            col("Ports", "string", 0, slice_ports),
            col("Endpoints", "string", 0, slice_endpoints),
        ],
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
