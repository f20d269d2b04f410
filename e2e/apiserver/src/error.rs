//! API errors rendered as the real `Status` object, because clients (kube-rs, kubectl) parse
//! `reason` and `code` to decide between retrying, relisting and giving up.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// An error answered to the client as a `kind: Status` object.
#[derive(Debug, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        let mut d = json!({ "kind": kind, "name": name });
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        self.details = Some(d);
        self
    }

    /// `resource` is the plural resource name, as the real apiserver words it ("services \"x\" not found").
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let gr = qualified(group, resource);
        Self::new(404, "NotFound", format!("{gr} \"{name}\" not found")).with_details(group, resource, name)
    }

    pub fn not_found_path(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let gr = qualified(group, resource);
        Self::new(409, "AlreadyExists", format!("{gr} \"{name}\" already exists"))
            .with_details(group, resource, name)
    }

    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let gr = qualified(group, resource);
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {gr} \"{name}\": {why}"),
        )
        .with_details(group, resource, name)
    }

    /// Server-side apply conflict; the message lists the fields and their managers, as upstream.
    pub fn apply_conflict(name: &str, message: String) -> Self {
        let mut e = Self::new(409, "Conflict", message);
        e.details = Some(json!({"name": name}));
        e
    }

    pub fn stale(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 with one cause per invalid field, like apiserver validation.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: &[(String, String)]) -> Self {
        let text: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{kind} \"{name}\" is invalid: {}", text.join(", ")),
        )
        .with_details(group, kind, name);
        if let Some(d) = e.details.as_mut() {
            d["causes"] = Value::Array(
                causes
                    .iter()
                    .map(|(f, m)| json!({"reason": "FieldValueInvalid", "message": m, "field": f}))
                    .collect(),
            );
        }
        e
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    pub fn unsupported_media(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    /// The `Status` body; also used inside watch ERROR events.
    pub fn status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        crate::http_util::json_response(code, &self.status())
    }
}
