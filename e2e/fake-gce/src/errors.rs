//! Errors in Google's JSON shape: `{"error":{"code","message","errors":[{"domain","reason","message"}]}}`.
use serde_json::{Value, json};

/// One API error as GCE reports it (HTTP status + reason + message).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApiError {
    pub code: u16,
    pub reason: String,
    pub message: String,
}

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.to_string(),
            message: message.into(),
        }
    }
    /// `what` is a project-relative path such as `projects/p/global/firewalls/x`.
    pub fn not_found(what: &str) -> Self {
        Self::new(404, "notFound", format!("The resource '{what}' was not found"))
    }
    pub fn already_exists(what: &str) -> Self {
        Self::new(
            409,
            "alreadyExists",
            format!("The resource '{what}' already exists"),
        )
    }
    pub fn in_use(noun: &str, what: &str, by: &str) -> Self {
        Self::new(
            400,
            "resourceInUseByAnotherResource",
            format!("The {noun} resource '{what}' is already being used by '{by}'"),
        )
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(400, "invalid", message)
    }
    pub fn invalid_field(field: &str, value: &str, why: &str) -> Self {
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(" {why}")
        };
        Self::invalid(format!("Invalid value for field '{field}': '{value}'.{why}"))
    }
    pub fn required(field: &str) -> Self {
        Self::new(400, "required", format!("Required field '{field}' not specified"))
    }
    pub fn quota(metric: &str, limit: u64, where_: &str) -> Self {
        Self::new(
            403,
            "quotaExceeded",
            format!("Quota '{metric}' exceeded.  Limit: {limit}.0 {where_}."),
        )
    }
    pub fn rate_limited() -> Self {
        Self::new(403, "rateLimitExceeded", "Rate Limit Exceeded")
    }
    pub fn parse_error(detail: &str) -> Self {
        Self::new(
            400,
            "parseError",
            format!("Invalid JSON payload received. {detail}"),
        )
    }

    /// The domain Google puts next to this reason.
    fn domain(&self) -> &'static str {
        match self.reason.as_str() {
            "rateLimitExceeded" | "userRateLimitExceeded" => "usageLimits",
            _ => "global",
        }
    }

    pub fn to_json(&self) -> Value {
        json!({"error": {
            "code": self.code,
            "message": self.message,
            "errors": [{"domain": self.domain(), "reason": self.reason, "message": self.message}],
            "status": self.rpc_status(),
        }})
    }

    /// The canonical RPC status name Google's front end adds next to the HTTP code (clients such
    /// as the Rust one map it to their error `Code`).
    fn rpc_status(&self) -> &'static str {
        match self.code {
            400 => "INVALID_ARGUMENT",
            401 => "UNAUTHENTICATED",
            403 => "PERMISSION_DENIED",
            404 => "NOT_FOUND",
            409 => "ALREADY_EXISTS",
            412 => "FAILED_PRECONDITION",
            429 => "RESOURCE_EXHAUSTED",
            501 => "UNIMPLEMENTED",
            503 => "UNAVAILABLE",
            504 => "DEADLINE_EXCEEDED",
            _ => "INTERNAL",
        }
    }

    /// Upper-case phrase GCE puts in an operation's `httpErrorMessage`.
    pub fn status_phrase(&self) -> &'static str {
        match self.code {
            400 => "BAD REQUEST",
            401 => "UNAUTHORIZED",
            403 => "FORBIDDEN",
            404 => "NOT FOUND",
            409 => "CONFLICT",
            412 => "PRECONDITION FAILED",
            429 => "TOO MANY REQUESTS",
            500 => "INTERNAL SERVER ERROR",
            503 => "SERVICE UNAVAILABLE",
            _ => "ERROR",
        }
    }

    /// The code used inside an operation's `error.errors[]` (e.g. `QUOTA_EXCEEDED`).
    pub fn operation_code(&self) -> String {
        match self.reason.as_str() {
            "notFound" => "RESOURCE_NOT_FOUND".to_string(),
            "alreadyExists" => "RESOURCE_ALREADY_EXISTS".to_string(),
            "invalid" => "INVALID_FIELD_VALUE".to_string(),
            other => upper_snake(other),
        }
    }
}

fn upper_snake(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests;
