//! Operations. A mutation changes the state when it is accepted; its Operation then reports
//! PENDING -> RUNNING -> DONE over the configured latency (computed from the clock on every read),
//! so a client that waits for DONE always reads the new state, and the resource never flickers.
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::clock::rfc3339;
use crate::errors::ApiError;
use crate::scope::Scope;
use crate::urls::Urls;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    pub name: String,
    pub id: String,
    /// `global`, `regions/R` or `zones/Z`.
    pub scope: String,
    pub operation_type: String,
    pub target_link: String,
    pub target_id: String,
    pub insert_ms: u64,
    pub latency_ms: u64,
    /// Set when the operation ends DONE with an error (fault injection in `operation` mode).
    pub error: Option<ApiError>,
    /// The client's `requestId`, if any (a retry with the same id gets this operation back).
    #[serde(default)]
    pub request_id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pending,
    Running,
    Done,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "PENDING",
            Status::Running => "RUNNING",
            Status::Done => "DONE",
        }
    }
}

impl Operation {
    /// The first fifth of the latency is PENDING, the rest RUNNING.
    fn start_ms(&self) -> u64 {
        self.insert_ms + self.latency_ms / 5
    }

    pub fn done_ms(&self) -> u64 {
        self.insert_ms + self.latency_ms
    }

    pub fn status(&self, now: u64) -> Status {
        if now >= self.done_ms() {
            Status::Done
        } else if now >= self.start_ms() {
            Status::Running
        } else {
            Status::Pending
        }
    }

    pub fn scope(&self) -> Option<Scope> {
        Scope::parse(&self.scope)
    }

    pub fn render(&self, urls: &Urls, now: u64) -> Value {
        let status = self.status(now);
        let scope = self.scope().unwrap_or(Scope::Global);
        let progress = match status {
            Status::Pending => 0,
            Status::Done => 100,
            Status::Running => {
                let span = self.latency_ms.max(1);
                (now.saturating_sub(self.insert_ms) * 100 / span).min(99)
            }
        };
        let mut op = json!({
            "kind": "compute#operation",
            "id": self.id,
            "name": self.name,
            "operationType": self.operation_type,
            "targetLink": self.target_link,
            "targetId": self.target_id,
            "status": status.as_str(),
            "user": "svcnet-fake-gce@example.com",
            "progress": progress,
            "insertTime": rfc3339(self.insert_ms),
            "selfLink": urls.op_link(&scope, &self.name),
        });
        if status != Status::Pending {
            op["startTime"] = json!(rfc3339(self.start_ms()));
        }
        match &scope {
            Scope::Region(_) => op["region"] = json!(urls.scope_link(&scope)),
            Scope::Zone(_) => op["zone"] = json!(urls.scope_link(&scope)),
            Scope::Global => {}
        }
        if status == Status::Done {
            op["endTime"] = json!(rfc3339(self.done_ms()));
            if let Some(e) = &self.error {
                op["error"] = json!({"errors": [{"code": e.operation_code(), "message": e.message}]});
                op["httpErrorStatusCode"] = json!(e.code);
                op["httpErrorMessage"] = json!(e.status_phrase());
            }
        }
        op
    }
}

#[cfg(test)]
mod tests;
