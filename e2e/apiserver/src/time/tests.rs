use super::*;

#[test]
fn round_trips_known_dates() {
    assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(format_rfc3339(1_709_251_199), "2024-02-29T23:59:59Z");
    assert_eq!(parse_rfc3339("2024-02-29T23:59:59Z"), Some(1_709_251_199));
    assert_eq!(
        parse_rfc3339("2024-03-01T01:59:59.123456+02:00"),
        Some(1_709_251_199)
    );
    assert_eq!(parse_rfc3339("garbage"), None);
}
