use google_cloud_compute_v1::model::Operation;
use google_cloud_compute_v1::model::operation::Status;

use super::check_done;

fn op(v: serde_json::Value) -> Operation {
    serde_json::from_value(v).expect("operation json")
}

#[test]
fn done_without_error_is_ok() {
    assert!(check_done("c", &op(serde_json::json!({"name": "op1", "status": "DONE"}))).is_ok());
}

#[test]
fn done_with_error_is_a_failure_even_though_the_poller_said_ok() {
    let o = op(serde_json::json!({
        "name": "op1", "status": "DONE", "httpErrorStatusCode": 503, "httpErrorMessage": "SERVICE UNAVAILABLE",
        "error": {"errors": [{"code": "backendError", "message": "injected"}]}
    }));
    assert_eq!(o.status, Some(Status::Done));
    let e = check_done("create_firewall x", &o).expect_err("failed operation");
    assert!(e.from_operation);
    assert_eq!(e.status, Some(503));
    assert_eq!(e.reason.as_deref(), Some("backendError"));
    assert_eq!(e.message, "injected");
    assert!(e.is_retryable());
}

#[test]
fn running_operation_is_not_done() {
    let e =
        check_done("c", &op(serde_json::json!({"name": "op1", "status": "RUNNING"}))).expect_err("not done");
    assert!(e.message.contains("did not finish"), "{e}");
}
