use super::ApiError;

#[test]
fn google_shape_and_operation_codes() {
    let e = ApiError::in_use("target_pool", "projects/p/regions/r/targetPools/a", "x");
    let j = e.to_json();
    assert_eq!(j["error"]["code"], 400);
    assert_eq!(
        j["error"]["errors"][0]["reason"],
        "resourceInUseByAnotherResource"
    );
    assert_eq!(j["error"]["errors"][0]["domain"], "global");
    assert_eq!(j["error"]["status"], "INVALID_ARGUMENT");
    assert_eq!(ApiError::not_found("x").to_json()["error"]["status"], "NOT_FOUND");
    assert_eq!(e.operation_code(), "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE");
    assert_eq!(
        ApiError::quota("FIREWALLS", 2, "globally").operation_code(),
        "QUOTA_EXCEEDED"
    );
    assert_eq!(
        ApiError::rate_limited().to_json()["error"]["errors"][0]["domain"],
        "usageLimits"
    );
}
