//! The lab's own access to the real kube-apiserver. The components (proxies, cloud controller, the
//! controller manager) talk TLS to it with their own identities; the lab's tooling (`up`, `add-node`, the
//! agent, the e2e test) is cluster-admin and goes through `kubectl proxy` (admin client certificate),
//! which the lab runs in the `vpc` namespace on [`API_PROXY`]: plain HTTP there, so the lab's tiny HTTP
//! client suffices and no TLS client is linked in. kubectl itself is the pinned build of the same release
//! as the server.

use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use crate::http;
use crate::state::{API_PROXY, State};

/// JSON merge patch (custom resources and plain fields).
pub const MERGE: &str = "application/merge-patch+json";
/// Strategic merge patch: lists such as `status.conditions` merge by key instead of being replaced, so a
/// write of the kubelet's Ready condition leaves the route controller's NetworkUnavailable alone.
pub const STRATEGIC: &str = "application/strategic-merge-patch+json";

pub fn url(path: &str) -> String {
    format!("http://{API_PROXY}{path}")
}

/// Where the calls are made from: the machine's namespace (each call re-runs this binary inside the
/// `vpc` namespace) or inside the `vpc` namespace itself (the agent).
#[derive(Clone, Debug)]
pub enum Api {
    Outside { vpc: String },
    Inside,
}

impl Api {
    pub fn outside(st: &State) -> Api {
        Api::Outside { vpc: st.vpc() }
    }

    /// One JSON call that must succeed (2xx); PATCH bodies are merge patches.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        let ct = if method == "PATCH" {
            MERGE
        } else {
            "application/json"
        };
        self.call_as(method, path, ct, body)
    }

    /// One JSON call with an explicit content type.
    pub fn call_as(&self, method: &str, path: &str, ct: &str, body: Option<&Value>) -> Result<Value> {
        match self {
            Api::Outside { vpc } => http::json_in(vpc, method, &url(path), ct, body),
            Api::Inside => http::json(method, &url(path), ct, body),
        }
    }

    pub fn get(&self, path: &str) -> Result<Value> {
        self.call("GET", path, None)
    }
}

/// A JSON call to the Kubernetes API as admin (made from the `vpc` namespace, through `kubectl proxy`);
/// PATCH is a merge patch.
pub fn api(st: &State, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
    Api::outside(st).call(method, path, body)
}

/// kubectl (the pinned build) as cluster-admin inside the `vpc` namespace.
pub fn kubectl(dir: &Path, st: &State) -> svcnet_testcluster::Kubectl {
    svcnet_testcluster::Kubectl {
        kubeconfig: st.admin_kubeconfig.clone(),
        state: dir.join("k8s"),
        netns: Some(st.vpc()),
    }
}

/// `kubectl args` as admin; stdout, or an error with kubectl's stderr.
pub fn kubectl_ok(dir: &Path, st: &State, args: &[&str]) -> Result<String> {
    Ok(kubectl(dir, st).ok(args)?)
}
