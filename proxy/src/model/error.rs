//! What the model reports about API objects it could not use: they are skipped, never fatal.

use thiserror::Error;

/// A problem with one API object. The message names the object and the field.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ModelError {
    #[error("{kind} {object}: field {field}: {message}")]
    Invalid {
        kind: &'static str,
        object: String,
        field: String,
        message: String,
    },
}

impl ModelError {
    pub fn invalid(
        kind: &'static str,
        object: &str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ModelError::Invalid {
            kind,
            object: object.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }
}
