use serde_json::json;

use super::*;
use crate::time::{format_rfc3339, now_secs};

fn running(ready: bool, restarts: i64) -> Value {
    json!({"name": "c", "ready": ready, "restartCount": restarts,
           "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}})
}

fn pod(statuses: Value) -> Value {
    json!({"metadata": {"name": "p"},
           "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
           "status": {"phase": "Running", "containerStatuses": statuses,
                      "conditions": [{"type": "Ready", "status": "True"}]}})
}

#[test]
fn ready_counts_ready_running_containers_and_restarts_are_summed() {
    let p = summary(&pod(json!([running(true, 1), running(false, 2)])));
    assert_eq!(
        (p.ready.as_str(), p.status.as_str(), p.restarts.as_str()),
        ("1/2", "Running", "3")
    );
}

#[test]
fn a_waiting_or_terminated_container_gives_the_status_the_first_one_wins() {
    let waiting = json!({"name": "a", "state": {"waiting": {"reason": "CrashLoopBackOff"}}});
    let killed = json!({"name": "b", "state": {"terminated": {"exitCode": 137, "signal": 9}}});
    assert_eq!(
        summary(&pod(json!([waiting, killed.clone()]))).status,
        "CrashLoopBackOff"
    );
    assert_eq!(
        summary(&pod(json!([running(true, 0), killed]))).status,
        "Signal:9"
    );
    let exited = json!({"name": "b", "state": {"terminated": {"exitCode": 3}}});
    assert_eq!(summary(&pod(json!([exited]))).status, "ExitCode:3");
    // Completed while another container still runs: back to Running (the pod is Ready).
    let done = json!({"name": "b", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}});
    assert_eq!(summary(&pod(json!([running(true, 0), done]))).status, "Running");
}

#[test]
fn deletion_shows_terminating_and_a_past_restart_shows_its_age() {
    let ago = format_rfc3339(now_secs() - 300);
    let mut p = pod(json!([{"name": "a", "ready": true, "restartCount": 2,
        "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago}}}]));
    p["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    let s = summary(&p);
    assert_eq!(s.status, "Terminating");
    assert_eq!(s.restarts, "2 (5m ago)");
    p["status"]["reason"] = json!("NodeLost");
    assert_eq!(summary(&p).status, "Unknown");
}

#[test]
fn wide_cells_show_none_when_empty_and_gates_count_true_conditions() {
    let mut p = pod(json!([]));
    assert_eq!(pod_ip(&p), "<none>");
    assert_eq!(readiness_gates(&p), "<none>");
    p["status"]["podIP"] = json!("10.0.0.9");
    assert_eq!(pod_ip(&p), "10.0.0.9");
    p["status"]["podIPs"] = json!([{"ip": "10.0.0.10"}]);
    assert_eq!(pod_ip(&p), "10.0.0.10");
    p["spec"]["readinessGates"] = json!([{"conditionType": "Ready"}, {"conditionType": "x/y"}]);
    assert_eq!(readiness_gates(&p), "1/2");
}

#[test]
fn endpoints_show_three_ip_ports_then_how_many_more() {
    let ep = |subsets: Value| endpoints_cell(&json!({"subsets": subsets}));
    assert_eq!(endpoints_cell(&json!({})), "<none>");
    assert_eq!(ep(json!([])), "<none>");
    let two = json!([{"addresses": [{"ip": "10.76.0.10"}, {"ip": "10.76.0.9"}],
                      "notReadyAddresses": [{"ip": "10.76.0.11"}],
                      "ports": [{"port": 9376, "protocol": "TCP"}]}]);
    assert_eq!(ep(two), "10.76.0.10:9376,10.76.0.9:9376");
    let four = json!([{"addresses": [{"ip": "a"}, {"ip": "b"}], "ports": [{"port": 1}, {"port": 2}]}]);
    assert_eq!(ep(four), "a:1,b:1,a:2 + 1 more...");
    let headless = json!([{"addresses": [{"ip": "fd00::1"}]}, {"addresses": [{"ip": "fd00::2"}],
                           "ports": [{"port": 53}]}]);
    assert_eq!(ep(headless), "fd00::1,[fd00::2]:53");
    // Only not-ready addresses: an empty cell, as upstream.
    assert_eq!(
        ep(json!([{"notReadyAddresses": [{"ip": "x"}], "ports": [{"port": 1}]}])),
        ""
    );
}

#[test]
fn endpoint_slices_show_ports_and_addresses_three_at_most() {
    let s = json!({"addressType": "IPv4",
        "ports": [{"name": "http", "port": 9376}, {"name": "named"}, {}, {"port": 53}],
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": false}}, {"addresses": ["10.0.0.2"]}]});
    assert_eq!(slice_ports(&s), "9376,named,* + 1 more...");
    assert_eq!(slice_endpoints(&s), "10.0.0.1,10.0.0.2");
    assert_eq!(slice_ports(&json!({})), "<unset>");
    assert_eq!(slice_endpoints(&json!({"endpoints": []})), "<unset>");
}
