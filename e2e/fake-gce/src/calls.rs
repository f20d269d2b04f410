//! The call log behind `GET /_fake/calls`: tests assert how many mutating calls a controller made.
use serde::Serialize;
use serde_json::{Value, json};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    pub seq: u64,
    pub time_ms: u64,
    pub method: String,
    pub path: String,
    pub query: String,
    pub status: u16,
    /// POST/PUT/PATCH/DELETE on a resource (operation polls and `wait` are not mutating).
    pub mutating: bool,
    /// Arrived inside `POST /batch/compute/v1`.
    pub batch: bool,
}

/// Bounded so a long lab run cannot grow memory without end.
const MAX_RECORDS: usize = 100_000;

#[derive(Debug, Default)]
pub struct CallLog {
    records: std::collections::VecDeque<CallRecord>,
    next_seq: u64,
}

impl CallLog {
    pub fn push(&mut self, mut r: CallRecord) {
        self.next_seq += 1;
        r.seq = self.next_seq;
        if self.records.len() >= MAX_RECORDS {
            self.records.pop_front();
        }
        self.records.push_back(r);
    }

    pub fn clear(&mut self) {
        self.records.clear();
    }

    /// Optional filters: `method` (exact, case-insensitive), `pathRegex` (searched).
    pub fn to_json(&self, method: Option<&str>, path_re: Option<&regex::Regex>) -> Value {
        let calls: Vec<&CallRecord> = self
            .records
            .iter()
            .filter(|r| method.is_none_or(|m| r.method.eq_ignore_ascii_case(m)))
            .filter(|r| path_re.is_none_or(|re| re.is_match(&r.path)))
            .collect();
        let mutating = calls.iter().filter(|r| r.mutating).count();
        json!({"total": calls.len(), "mutating": mutating, "calls": calls})
    }
}
