//! Errors of GCE calls, classified the way the controller acts on them: done (404 on delete,
//! 409 on insert), back off and retry (429, 5xx, 403 rateLimitExceeded/quotaExceeded, transport
//! failures), or give up for this sync.

use serde_json::Value;

/// Google's `error.errors[].reason` values the controller reacts to.
pub(crate) const REASON_RATE_LIMIT: &str = "rateLimitExceeded";
pub(crate) const REASON_USER_RATE_LIMIT: &str = "userRateLimitExceeded";
pub(crate) const REASON_QUOTA: &str = "quotaExceeded";
pub(crate) const REASON_IN_USE: &str = "resourceInUseByAnotherResource";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("GCE {call}: {}{message}", status.map(|s| format!("{s} ")).unwrap_or_default())]
pub(crate) struct GceError {
    /// What was being done, e.g. `create_firewall k8s-fw-a123` or `get targetPools/a123`.
    pub call: String,
    /// HTTP status (of the call, or `httpErrorStatusCode` of a failed operation).
    pub status: Option<u16>,
    /// First `error.errors[].reason` (HTTP) or `error.errors[].code` (operation), if any.
    pub reason: Option<String>,
    pub message: String,
    /// The operation was accepted and ended DONE with an `error`.
    pub from_operation: bool,
    /// No HTTP answer (connect/io/timeout).
    pub transport: bool,
}

impl GceError {
    pub(crate) fn new(call: impl Into<String>, message: impl Into<String>) -> Self {
        GceError {
            call: call.into(),
            status: None,
            reason: None,
            message: message.into(),
            from_operation: false,
            transport: false,
        }
    }

    /// Maps a google-cloud-gax error: HTTP status, and the reason parsed from the JSON payload.
    pub(crate) fn from_gax(call: impl Into<String>, err: &google_cloud_gax::error::Error) -> Self {
        let mut e = GceError::new(call, err.to_string());
        e.status = err.http_status_code();
        // JSON error bodies arrive parsed: Google's `error.errors[].reason` becomes an ErrorInfo
        // detail of the status.
        if let Some(st) = err.status() {
            e.message = st.message.clone();
            e.reason = st.details.iter().find_map(|d| match d {
                google_cloud_gax::error::rpc::StatusDetails::ErrorInfo(info) if !info.reason.is_empty() => {
                    Some(info.reason.clone())
                }
                _ => None,
            });
        } else if let Some(payload) = err.http_payload() {
            let (reason, message) = parse_google_error(payload);
            e.reason = reason;
            if let Some(m) = message {
                e.message = m;
            }
        }
        e.transport =
            e.status.is_none() && (err.is_io() || err.is_connect() || err.is_timeout() || err.is_transport());
        e
    }

    pub(crate) fn is_not_found(&self) -> bool {
        self.status == Some(404)
            || self.reason.as_deref() == Some("notFound")
            || self.reason.as_deref() == Some("RESOURCE_NOT_FOUND")
    }

    pub(crate) fn is_already_exists(&self) -> bool {
        self.status == Some(409)
            || self.reason.as_deref() == Some("alreadyExists")
            || self.reason.as_deref() == Some("RESOURCE_ALREADY_EXISTS")
    }

    pub(crate) fn is_in_use(&self) -> bool {
        self.reason.as_deref() == Some(REASON_IN_USE)
            || self.reason.as_deref() == Some("RESOURCE_IN_USE_BY_ANOTHER_RESOURCE")
    }

    /// Worth retrying after a pause: rate limits, quota (may free up), server-side trouble and
    /// transport failures. Everything else (400 invalid, 403 forbidden, 404/409 outside their
    /// done-cases) fails the sync at once.
    pub(crate) fn is_retryable(&self) -> bool {
        if self.transport {
            return true;
        }
        let reason = self.reason.as_deref().unwrap_or("");
        if matches!(
            reason,
            REASON_RATE_LIMIT
                | REASON_USER_RATE_LIMIT
                | REASON_QUOTA
                | "RATE_LIMIT_EXCEEDED"
                | "QUOTA_EXCEEDED"
        ) {
            return true;
        }
        matches!(
            self.status,
            Some(429) | Some(500) | Some(502) | Some(503) | Some(504)
        )
    }

    /// Low-cardinality label for metrics.
    pub(crate) fn metric_label(&self) -> &'static str {
        if self.transport {
            "transport"
        } else if self.is_retryable() {
            "retryable"
        } else if self.is_not_found() {
            "not_found"
        } else if self.is_already_exists() {
            "already_exists"
        } else if self.is_in_use() {
            "in_use"
        } else {
            "other"
        }
    }
}

/// `{"error":{"code","message","errors":[{"reason","message"}]}}` -> (reason, message).
pub(crate) fn parse_google_error(payload: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(v) = serde_json::from_slice::<Value>(payload) else {
        return (None, None);
    };
    let err = &v["error"];
    let first = &err["errors"][0];
    let reason = first["reason"]
        .as_str()
        .or_else(|| err["status"].as_str())
        .map(str::to_owned);
    let message = err["message"]
        .as_str()
        .or_else(|| first["message"].as_str())
        .map(str::to_owned);
    (reason, message)
}

#[cfg(test)]
mod tests;
