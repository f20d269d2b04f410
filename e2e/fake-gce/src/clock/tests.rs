use super::rfc3339;

#[test]
fn formats_known_instants() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000+00:00");
    // 2024-02-29T23:59:59.123Z, a leap day.
    assert_eq!(rfc3339(1_709_251_199_123), "2024-02-29T23:59:59.123+00:00");
}
