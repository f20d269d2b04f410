use serde_json::json;

use super::*;

fn log() -> Value {
    let p = "/compute/v1/projects/p";
    json!({"total": 7, "mutating": 2, "calls": [
        {"seq": 1, "timeMs": 1000, "method": "GET", "path": format!("{p}/regions/r/addresses/a1"), "query": "", "status": 404, "mutating": false, "batch": false},
        {"seq": 2, "timeMs": 1001, "method": "POST", "path": format!("{p}/regions/r/addresses"), "query": "", "status": 200, "mutating": true, "batch": false},
        {"seq": 3, "timeMs": 1200, "method": "GET", "path": format!("{p}/regions/r/operations/op-1"), "query": "", "status": 200, "mutating": false, "batch": false},
        {"seq": 4, "timeMs": 1300, "method": "GET", "path": format!("{p}/regions/r/targetPools"), "query": "", "status": 200, "mutating": false, "batch": false},
        {"seq": 5, "timeMs": 1400, "method": "POST", "path": format!("{p}/regions/r/targetPools/a1/addInstance"), "query": "", "status": 200, "mutating": true, "batch": false},
        {"seq": 6, "timeMs": 1500, "method": "GET", "path": format!("{p}/global/firewalls/k8s-fw-a1"), "query": "", "status": 200, "mutating": false, "batch": false},
        {"seq": 7, "timeMs": 1600, "method": "POST", "path": format!("{p}/global/operations/op-2/wait"), "query": "", "status": 200, "mutating": false, "batch": false},
        {"seq": 8, "method": "GET"}
    ]})
}

#[test]
fn calls_are_counted_by_kind() {
    let calls = parse_calls(&log());
    assert_eq!(calls.len(), 7, "the malformed entry is skipped");
    let c = count(&calls);
    assert_eq!(
        c,
        Counts {
            total: 7,
            mutating: 2,
            gets: 2,
            lists: 1,
            polls: 2,
            errors: 1
        }
    );
}

#[test]
fn mutating_calls_are_labelled_without_project_and_scope() {
    let calls = parse_calls(&log());
    assert_eq!(
        mutating_labels(&calls),
        ["POST addresses", "POST targetPools/a1/addInstance"]
    );
    assert_eq!(calls[5].label(), "GET firewalls/k8s-fw-a1");
}

#[test]
fn rfc3339_parses_to_epoch_ms() {
    assert_eq!(rfc3339_ms("1970-01-01T00:00:00.000+00:00"), Some(0));
    assert_eq!(rfc3339_ms("1970-01-01T00:00:01Z"), Some(1000));
    // 2026-11-21T10:30:46.789Z: 20778 days after the epoch.
    let want = (20_778 * 86_400 + 10 * 3600 + 30 * 60 + 46) * 1000 + 789;
    assert_eq!(rfc3339_ms("2026-11-21T10:30:46.789+00:00"), Some(want));
    assert_eq!(rfc3339_ms("2026-11-21T11:30:46.789+01:00"), Some(want));
    assert_eq!(rfc3339_ms("2026-11-21T09:30:46.789-01:00"), Some(want));
    assert_eq!(
        rfc3339_ms("2024-02-29T00:00:00.5Z"),
        Some(19_782 * 86_400_000 + 500)
    );
    assert_eq!(rfc3339_ms("not a time"), None);
    assert_eq!(rfc3339_ms("2026-13-01T00:00:00Z"), None);
}

#[test]
fn last_done_operation_since_a_time() {
    let st = json!({"operations": [
        {"status": "DONE", "insertTime": "1970-01-01T00:00:01.000+00:00", "endTime": "1970-01-01T00:00:09.000+00:00"},
        {"status": "DONE", "insertTime": "1970-01-01T00:00:05.000+00:00", "endTime": "1970-01-01T00:00:06.000+00:00"},
        {"status": "DONE", "insertTime": "1970-01-01T00:00:05.000+00:00", "endTime": "1970-01-01T00:00:07.500+00:00"},
        {"status": "RUNNING", "insertTime": "1970-01-01T00:00:05.000+00:00"}
    ]});
    // The raw shape of the state dump.
    let raw = json!({"operations": [
        {"name": "op-1", "insertMs": 1000, "latencyMs": 8000},
        {"name": "op-2", "insertMs": 5000, "latencyMs": 2500}
    ]});
    assert_eq!(last_operation_done_ms(&raw, 2000), Some(7500));
    assert_eq!(last_operation_done_ms(&raw, 0), Some(9000));
    // The first one was inserted before `since`: not part of the scenario.
    assert_eq!(last_operation_done_ms(&st, 2000), Some(7500));
    assert_eq!(last_operation_done_ms(&st, 0), Some(9000));
    assert_eq!(last_operation_done_ms(&st, 10_000), None);
}
