use super::{GceError, parse_google_error};

fn err(status: u16, reason: &str) -> GceError {
    GceError {
        status: Some(status),
        reason: Some(reason.to_owned()),
        ..GceError::new("call", "m")
    }
}

#[test]
fn google_error_payload_is_parsed() {
    let body = br#"{"error":{"code":403,"message":"Rate Limit Exceeded","errors":[{"domain":"usageLimits","reason":"rateLimitExceeded","message":"x"}]}}"#;
    let (reason, message) = parse_google_error(body);
    assert_eq!(reason.as_deref(), Some("rateLimitExceeded"));
    assert_eq!(message.as_deref(), Some("Rate Limit Exceeded"));
    assert_eq!(parse_google_error(b"not json"), (None, None));
}

#[test]
fn classification_follows_the_controller_rules() {
    assert!(err(403, "rateLimitExceeded").is_retryable());
    assert!(err(403, "quotaExceeded").is_retryable());
    assert!(!err(403, "forbidden").is_retryable(), "plain 403 is permanent");
    assert!(err(429, "").is_retryable());
    assert!(err(503, "backendError").is_retryable());
    assert!(!err(400, "invalid").is_retryable());
    assert!(err(404, "notFound").is_not_found());
    assert!(err(409, "alreadyExists").is_already_exists());
    assert!(err(400, "resourceInUseByAnotherResource").is_in_use());
    let mut t = GceError::new("call", "connection refused");
    assert!(!t.is_retryable());
    t.transport = true;
    assert!(t.is_retryable());
    assert_eq!(t.metric_label(), "transport");
}

#[test]
fn reason_comes_from_the_parsed_status_of_the_client_error() {
    let body = bytes::Bytes::from_static(
        br#"{"error":{"code":403,"message":"Rate Limit Exceeded","errors":[{"domain":"usageLimits","reason":"rateLimitExceeded","message":"Rate Limit Exceeded"}]}}"#,
    );
    let status = google_cloud_gax::error::rpc::Status::try_from(&body).expect("google error body");
    let gax = google_cloud_gax::error::Error::service_with_http_metadata(status, Some(403), None);
    let e = GceError::from_gax("get firewalls/x", &gax);
    assert_eq!(e.status, Some(403));
    assert_eq!(e.reason.as_deref(), Some("rateLimitExceeded"));
    assert_eq!(e.message, "Rate Limit Exceeded");
    assert!(e.is_retryable(), "403 rateLimitExceeded backs off");
}
