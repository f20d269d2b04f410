//! The API's timestamps: `Time` (RFC 3339, seconds) and `MicroTime` (microseconds), in UTC.

use std::time::{SystemTime, UNIX_EPOCH};

/// RFC 3339 in UTC with seconds (the API's `Time`).
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// RFC 3339 with microseconds (the API's `MicroTime`, a Lease's renewTime).
pub fn rfc3339_micro(t: SystemTime) -> String {
    let micros = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_micros());
    let s = rfc3339(t);
    format!("{}.{micros:06}Z", s.trim_end_matches('Z'))
}

/// Days since 1970-01-01 to (year, month, day) (Howard Hinnant's civil_from_days).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests;
