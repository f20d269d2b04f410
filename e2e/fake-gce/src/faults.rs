//! Fault injection (fail the next N calls or a fraction of calls matching method + path regex,
//! with a status and reason, optionally as an operation that ends DONE with an error) and
//! added latency; also the per-second rate limit.
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::errors::ApiError;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FaultMode {
    /// The HTTP call itself fails with the status and reason.
    #[default]
    Http,
    /// A mutation is accepted (validated, nothing changes) and its Operation ends DONE with the
    /// error, as GCE reports asynchronous failures. Reads fall back to `http`.
    Operation,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultSpec {
    /// HTTP method to match (case-insensitive); absent = any.
    #[serde(default)]
    pub method: Option<String>,
    /// Regex searched in the request path (e.g. `/targetPools/[^/]+/addInstance$`); absent = any.
    #[serde(default)]
    pub path_regex: Option<String>,
    /// Fail only the next N matching calls; absent = no limit.
    #[serde(default)]
    pub count: Option<u64>,
    /// Fail this fraction (0..=1) of matching calls; absent = all.
    #[serde(default)]
    pub fraction: Option<f64>,
    /// HTTP status of the failure; absent with no reason = latency only.
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    /// Added latency for matching calls (applied even when the call is not failed).
    #[serde(default)]
    pub delay_ms: Option<u64>,
    #[serde(default)]
    pub mode: FaultMode,
    /// Seed for the fraction's pseudo-random draws (reproducible tests).
    #[serde(default)]
    pub seed: Option<u64>,
}

#[derive(Debug)]
struct Fault {
    id: u64,
    spec: FaultSpec,
    path_re: Option<regex::Regex>,
    remaining: Option<u64>,
    hits: u64,
    rng: u64,
}

#[derive(Debug, Default)]
pub struct Faults {
    list: Vec<Fault>,
    next_id: u64,
}

/// What the matching rules decided for one call.
#[derive(Debug, Default)]
pub struct Decision {
    pub delay_ms: u64,
    pub error: Option<(ApiError, FaultMode)>,
}

impl Faults {
    pub fn add(&mut self, spec: FaultSpec) -> Result<u64, ApiError> {
        let path_re = match &spec.path_regex {
            Some(r) => Some(
                regex::Regex::new(r).map_err(|e| ApiError::invalid_field("pathRegex", r, &e.to_string()))?,
            ),
            None => None,
        };
        if let Some(f) = spec.fraction
            && !(0.0..=1.0).contains(&f)
        {
            return Err(ApiError::invalid_field(
                "fraction",
                &f.to_string(),
                "Must be in 0..=1.",
            ));
        }
        self.next_id += 1;
        let rng = spec
            .seed
            .unwrap_or(0x9E37_79B9_7F4A_7C15 ^ crate::clock::now_ms())
            | 1;
        self.list.push(Fault {
            id: self.next_id,
            remaining: spec.count,
            spec,
            path_re,
            hits: 0,
            rng,
        });
        Ok(self.next_id)
    }

    pub fn clear(&mut self) {
        self.list.clear();
    }

    pub fn to_json(&self) -> Value {
        let items: Vec<Value> = self
            .list
            .iter()
            .map(|f| json!({"id": f.id, "spec": f.spec, "remaining": f.remaining, "hits": f.hits}))
            .collect();
        json!({ "faults": items })
    }

    pub fn decide(&mut self, method: &str, path: &str, mutating: bool) -> Decision {
        let mut d = Decision::default();
        for f in &mut self.list {
            if f.spec
                .method
                .as_deref()
                .is_some_and(|m| !m.eq_ignore_ascii_case(method))
            {
                continue;
            }
            if f.path_re.as_ref().is_some_and(|re| !re.is_match(path)) {
                continue;
            }
            if f.remaining == Some(0) {
                continue;
            }
            if let Some(frac) = f.spec.fraction
                && next_unit(&mut f.rng) >= frac
            {
                continue;
            }
            if let Some(r) = f.remaining.as_mut() {
                *r -= 1;
            }
            f.hits += 1;
            d.delay_ms += f.spec.delay_ms.unwrap_or(0);
            if d.error.is_none()
                && let Some(err) = fault_error(&f.spec)
            {
                let mode = if mutating { f.spec.mode } else { FaultMode::Http };
                d.error = Some((err, mode));
            }
        }
        d
    }
}

fn fault_error(spec: &FaultSpec) -> Option<ApiError> {
    if spec.status.is_none() && spec.reason.is_none() {
        return None;
    }
    let reason = spec.reason.clone().unwrap_or_else(|| {
        match spec.status.unwrap_or(500) {
            400 => "invalid",
            403 => "forbidden",
            404 => "notFound",
            409 => "alreadyExists",
            429 => "rateLimitExceeded",
            503 => "backendError",
            _ => "internalError",
        }
        .to_string()
    });
    let status = spec.status.unwrap_or(match reason.as_str() {
        "quotaExceeded" | "rateLimitExceeded" | "forbidden" => 403,
        "notFound" => 404,
        "alreadyExists" => 409,
        "invalid" | "resourceInUseByAnotherResource" => 400,
        "backendError" => 503,
        _ => 500,
    });
    let message = spec
        .message
        .clone()
        .unwrap_or_else(|| format!("Injected fault: {reason}"));
    Some(ApiError {
        code: status,
        reason,
        message,
    })
}

/// xorshift64*: good enough for "fail about this fraction of calls".
fn next_unit(state: &mut u64) -> f64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
    r as f64 / (1u64 << 53) as f64
}

/// At most `per_second` compute calls in each one-second window.
#[derive(Debug, Default)]
pub struct RateLimit {
    pub per_second: Option<u32>,
    window_start_ms: u64,
    count: u32,
}

impl RateLimit {
    pub fn set(&mut self, per_second: Option<u32>) {
        self.per_second = per_second.filter(|n| *n > 0);
        self.count = 0;
    }

    /// Counts the call; false when it is over the limit.
    pub fn admit(&mut self, now_ms: u64) -> bool {
        let Some(limit) = self.per_second else { return true };
        if now_ms.saturating_sub(self.window_start_ms) >= 1000 {
            self.window_start_ms = now_ms;
            self.count = 0;
        }
        self.count += 1;
        self.count <= limit
    }
}

#[cfg(test)]
mod tests;
