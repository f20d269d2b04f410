use std::time::{Duration, UNIX_EPOCH};

use super::*;

#[test]
fn times_are_rfc3339() {
    assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
    // 2024-02-29T12:34:56Z (a leap day) = 1709210096.
    let t = UNIX_EPOCH + Duration::from_secs(1_709_210_096);
    assert_eq!(rfc3339(t), "2024-02-29T12:34:56Z");
    assert_eq!(
        rfc3339_micro(t + Duration::from_micros(1500)),
        "2024-02-29T12:34:56.001500Z"
    );
}
