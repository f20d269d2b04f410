//! The body of a server-side-apply status write. SSA is the recommended way to write the status
//! because empty fields are omitted from the JSON: with apply, an omitted field that this
//! field manager set before is removed, while a merge patch would leave it in place.

use kube::Resource;
use serde_json::{Value, json};

use crate::cloud_load_balancer::CloudLoadBalancer;
use crate::status::CloudLoadBalancerStatus;

impl CloudLoadBalancerStatus {
    /// `{"apiVersion": "svcnet.dev/v1alpha1", "kind": "CloudLoadBalancer", "status": ...}`, for
    /// `Api::patch_status(name, &PatchParams::apply(manager), &Patch::Apply(body))`.
    pub fn apply_patch(&self) -> Result<Value, serde_json::Error> {
        Ok(json!({
            "apiVersion": CloudLoadBalancer::api_version(&()),
            "kind": CloudLoadBalancer::kind(&()),
            "status": serde_json::to_value(self)?,
        }))
    }
}

#[cfg(test)]
mod tests;
