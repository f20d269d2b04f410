//! The fake GCE as the lab reaches it: svcnet-fake-gce listens in the `vpc` namespace on
//! [`VPC_IP`]:[`GCE_PORT`], so the lab's tooling calls it from there (the agent, already inside, only
//! needs its [`url`]).

use anyhow::Result;
use serde_json::Value;

use crate::http;
use crate::state::{GCE_PORT, State, VPC_IP};

pub fn url(path: &str) -> String {
    format!("http://{VPC_IP}:{GCE_PORT}{path}")
}

/// A JSON call to the fake GCE (made from the `vpc` namespace).
pub fn call(st: &State, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
    http::json_in(&st.vpc(), method, &url(path), "application/json", body)
}
