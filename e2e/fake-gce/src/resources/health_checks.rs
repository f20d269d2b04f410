//! Legacy global HTTP health checks (used by target pools).
use serde_json::{Map, Value, json};

use crate::errors::ApiError;
use crate::validate;

pub fn prepare(mut obj: Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    let port = validate::opt_int(&obj, "port", 1, 65535)?.unwrap_or(80);
    obj.insert("port".into(), json!(port));
    let path = validate::opt_str(&obj, "requestPath")?.unwrap_or("/").to_string();
    if !path.starts_with('/') {
        return Err(ApiError::invalid_field(
            "resource.requestPath",
            &path,
            "Must start with '/'.",
        ));
    }
    obj.insert("requestPath".into(), json!(path));
    let interval = validate::opt_int(&obj, "checkIntervalSec", 1, 300)?.unwrap_or(5);
    let timeout = validate::opt_int(&obj, "timeoutSec", 1, 300)?.unwrap_or(5);
    if timeout > interval {
        return Err(ApiError::invalid_field(
            "resource.timeoutSec",
            &timeout.to_string(),
            "Timeout sec must be less than or equal to check interval sec.",
        ));
    }
    obj.insert("checkIntervalSec".into(), json!(interval));
    obj.insert("timeoutSec".into(), json!(timeout));
    for f in ["healthyThreshold", "unhealthyThreshold"] {
        let v = validate::opt_int(&obj, f, 1, 10)?.unwrap_or(2);
        obj.insert(f.into(), json!(v));
    }
    validate::opt_str(&obj, "host")?;
    Ok(obj)
}
