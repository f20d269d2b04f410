use super::*;

fn op(latency_ms: u64, error: Option<ApiError>) -> Operation {
    Operation {
        name: "operation-1".into(),
        id: "7".into(),
        scope: "regions/r1".into(),
        operation_type: "insert".into(),
        target_link: "t".into(),
        target_id: "8".into(),
        insert_ms: 1_000,
        latency_ms,
        error,
        request_id: None,
    }
}

fn urls() -> Urls {
    Urls {
        base: "http://h/compute/v1/".into(),
        project: "p".into(),
    }
}

#[test]
fn status_moves_with_time() {
    let o = op(1_000, None);
    assert_eq!(o.status(1_000), Status::Pending);
    assert_eq!(o.status(1_500), Status::Running);
    assert_eq!(o.status(2_000), Status::Done);
    let r = o.render(&urls(), 1_500);
    assert_eq!(r["status"], "RUNNING");
    assert_eq!(r["region"], "http://h/compute/v1/projects/p/regions/r1");
    assert_eq!(
        r["selfLink"],
        "http://h/compute/v1/projects/p/regions/r1/operations/operation-1"
    );
    assert!(r.get("endTime").is_none());
    assert_eq!(o.render(&urls(), 5_000)["progress"], 100);
}

#[test]
fn failed_operation_reports_error_only_when_done() {
    let o = op(100, Some(ApiError::quota("FORWARDING_RULES", 1, "in region r1")));
    assert!(o.render(&urls(), 1_050).get("error").is_none());
    let r = o.render(&urls(), 1_100);
    assert_eq!(r["error"]["errors"][0]["code"], "QUOTA_EXCEEDED");
    assert_eq!(r["httpErrorStatusCode"], 403);
    assert_eq!(r["httpErrorMessage"], "FORBIDDEN");
}
