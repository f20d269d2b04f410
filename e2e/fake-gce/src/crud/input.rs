//! What a mutation hands to the resource rules: the request body as a JSON object, and the view of
//! the project the rules validate references against.
use serde_json::{Map, Value};

use crate::app::{App, Inner};
use crate::errors::ApiError;
use crate::resources::Ctx;

pub fn parse_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::parse_error("Expected a JSON object.")),
        Err(e) => Err(ApiError::parse_error(&e.to_string())),
    }
}

pub fn ctx<'a>(app: &'a App, inner: &'a Inner) -> Ctx<'a> {
    Ctx {
        cfg: &app.cfg,
        urls: &app.urls,
        res: &inner.data.resources,
    }
}
