//! The successful answer of a compute route.
use serde_json::Value;

/// A successful answer: status, JSON body (None = empty), and whether resources changed.
pub struct Done {
    pub status: u16,
    pub body: Option<Value>,
    pub mutated: bool,
}

pub fn ok(body: Value) -> Done {
    Done {
        status: 200,
        body: Some(body),
        mutated: false,
    }
}
