//! Pure reading of the fake GCE's call log (`GET /_fake/calls`) and operation timestamps
//! (`GET /_fake/state`): what C1 and C2 count and time.

use serde_json::Value;

/// One logged Compute API call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub time_ms: u64,
    pub method: String,
    pub path: String,
    pub status: u16,
    pub mutating: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// insert/delete/patch/update/custom verbs (the fake's `mutating` flag).
    Mutating,
    /// GET of one resource.
    Get,
    /// GET of a collection (or an aggregated list).
    List,
    /// GET/POST of an operation (polls, `wait`).
    Poll,
}

/// Collections the controller lists (a GET whose last segment is one of these is a list).
const COLLECTIONS: &[&str] = &[
    "addresses",
    "firewalls",
    "forwardingRules",
    "httpHealthChecks",
    "targetPools",
    "routes",
    "instances",
    "operations",
    "networks",
    "regions",
    "zones",
];

impl Call {
    pub fn kind(&self) -> Kind {
        if self.path.contains("/operations/") {
            Kind::Poll
        } else if self.mutating {
            Kind::Mutating
        } else if self.path.contains("/aggregated/")
            || self
                .path
                .rsplit('/')
                .next()
                .is_some_and(|last| COLLECTIONS.contains(&last))
        {
            Kind::List
        } else {
            Kind::Get
        }
    }

    /// `POST targetPools/NAME/addInstance` style label: method + path after the scope.
    pub fn label(&self) -> String {
        let tail = ["/global/", "/regions/", "/zones/"]
            .iter()
            .find_map(|scope| {
                let (_, rest) = self.path.split_once(scope)?;
                // regions/R/... and zones/Z/...: drop the scope's own name.
                Some(if *scope == "/global/" {
                    rest.to_owned()
                } else {
                    rest.split_once('/').map_or(rest, |(_, r)| r).to_owned()
                })
            })
            .unwrap_or_else(|| self.path.clone());
        format!("{} {tail}", self.method)
    }
}

/// Parses the `calls` array of `GET /_fake/calls`; malformed entries are skipped.
pub fn parse_calls(v: &Value) -> Vec<Call> {
    v["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some(Call {
                time_ms: c["timeMs"].as_u64()?,
                method: c["method"].as_str()?.to_owned(),
                path: c["path"].as_str()?.to_owned(),
                status: u16::try_from(c["status"].as_u64()?).ok()?,
                mutating: c["mutating"].as_bool().unwrap_or(false),
            })
        })
        .collect()
}

/// Calls by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: usize,
    pub mutating: usize,
    pub gets: usize,
    pub lists: usize,
    pub polls: usize,
    /// Answered with a status >= 400 (e.g. 404 on a GET of an object not created yet).
    pub errors: usize,
}

pub fn count(calls: &[Call]) -> Counts {
    let mut c = Counts {
        total: calls.len(),
        ..Default::default()
    };
    for call in calls {
        match call.kind() {
            Kind::Mutating => c.mutating += 1,
            Kind::Get => c.gets += 1,
            Kind::List => c.lists += 1,
            Kind::Poll => c.polls += 1,
        }
        if call.status >= 400 {
            c.errors += 1;
        }
    }
    c
}

/// Labels of the mutating calls, in order.
pub fn mutating_labels(calls: &[Call]) -> Vec<String> {
    calls
        .iter()
        .filter(|c| c.kind() == Kind::Mutating)
        .map(Call::label)
        .collect()
}

/// When an operation of `GET /_fake/state` is (or will be) DONE and when it was inserted, in ms
/// since the epoch. The state dump stores operations raw (`insertMs` + `latencyMs`); the API's
/// rendered shape (`insertTime`, `endTime` when DONE) is read too.
pub fn operation_times(op: &Value) -> Option<(u64, u64)> {
    if let (Some(insert), Some(latency)) = (op["insertMs"].as_u64(), op["latencyMs"].as_u64()) {
        return Some((insert, insert.saturating_add(latency)));
    }
    let insert = op["insertTime"].as_str().and_then(rfc3339_ms)?;
    let end = op["endTime"].as_str().and_then(rfc3339_ms)?;
    Some((insert, end))
}

/// Latest DONE time (ms since the epoch) of the operations in `GET /_fake/state` that were
/// inserted at or after `since_ms`.
pub fn last_operation_done_ms(state: &Value, since_ms: u64) -> Option<u64> {
    state["operations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(operation_times)
        .filter(|(insert, _)| *insert >= since_ms)
        .map(|(_, done)| done)
        .max()
}

/// `2026-11-21T10:00:00.123+00:00` (or `Z`, or without fraction) to ms since the Unix epoch.
pub fn rfc3339_ms(s: &str) -> Option<u64> {
    let (date, rest) = s.split_once('T')?;
    let mut d = date.split('-');
    let y: i64 = d.next()?.parse().ok()?;
    let m: u32 = d.next()?.parse().ok()?;
    let day: u32 = d.next()?.parse().ok()?;
    // Time and offset: HH:MM:SS[.fff](Z|+HH:MM|-HH:MM).
    let offset_at = rest.find(['Z', '+', '-']).unwrap_or(rest.len());
    let (time, offset) = rest.split_at(offset_at);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.split(':');
    let hh: i64 = t.next()?.parse().ok()?;
    let mm: i64 = t.next()?.parse().ok()?;
    let ss: i64 = t.next()?.parse().ok()?;
    let millis: i64 = if frac.is_empty() {
        0
    } else {
        let digits: String = frac.chars().chain("000".chars()).take(3).collect();
        digits.parse().ok()?
    };
    let off_min: i64 = match offset.chars().next() {
        None | Some('Z') => 0,
        Some(sign) => {
            let (oh, om) = offset.get(1..)?.split_once(':')?;
            let v = oh.parse::<i64>().ok()? * 60 + om.parse::<i64>().ok()?;
            if sign == '-' { -v } else { v }
        }
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(y, m, day);
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss - off_min * 60;
    u64::try_from(secs * 1000 + millis).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests;
