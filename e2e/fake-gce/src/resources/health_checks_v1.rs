//! Global health checks (the non-legacy `healthChecks` collection, used by backend services).
use serde_json::{Map, Value, json};

use crate::errors::ApiError;
use crate::validate;

const TYPES: [&str; 7] = ["TCP", "SSL", "HTTP", "HTTPS", "HTTP2", "GRPC", "GRPC_WITH_TLS"];

pub fn prepare(mut obj: Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    let ty = validate::opt_str(&obj, "type")?
        .ok_or_else(|| ApiError::required("resource.type"))?
        .to_string();
    validate::one_of("resource.type", &ty, &TYPES)?;
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
    if ty == "HTTP" {
        let mut http = match obj.remove("httpHealthCheck") {
            Some(Value::Object(m)) => m,
            None | Some(Value::Null) => Map::new(),
            Some(_) => return Err(ApiError::invalid("httpHealthCheck must be an object.")),
        };
        let port = validate::opt_int(&http, "port", 1, 65535)?.unwrap_or(80);
        http.insert("port".into(), json!(port));
        let path = validate::opt_str(&http, "requestPath")?
            .unwrap_or("/")
            .to_string();
        if !path.starts_with('/') {
            return Err(ApiError::invalid_field(
                "resource.httpHealthCheck.requestPath",
                &path,
                "Must start with '/'.",
            ));
        }
        http.insert("requestPath".into(), json!(path));
        if http.get("proxyHeader").is_none() {
            http.insert("proxyHeader".into(), json!("NONE"));
        }
        obj.insert("httpHealthCheck".into(), Value::Object(http));
    }
    Ok(obj)
}
