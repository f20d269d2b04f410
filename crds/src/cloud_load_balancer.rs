//! The `CloudLoadBalancer` custom resource: one per `type: LoadBalancer` Service, same name and
//! namespace, owned by that Service. The Service stays the source of truth; this object is the
//! cloud controller's report of what GCE holds for it, so `kubectl get clb -A` answers
//! "what did GCE get for my Service?" without gcloud.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::status::CloudLoadBalancerStatus;

/// API group of every svcnet CRD.
pub const GROUP: &str = "svcnet.dev";
/// Served and stored version of `CloudLoadBalancer`.
pub const VERSION: &str = "v1alpha1";

// Everything the load balancer should look like is read from the Service itself, so the spec
// only names it and cannot drift from it; the UID pins one incarnation of a Service name.
/// The Service this load balancer belongs to.
// Each printcolumn(...) repeats keys like type_ = "string", which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "svcnet.dev",
    version = "v1alpha1",
    kind = "CloudLoadBalancer",
    plural = "cloudloadbalancers",
    shortname = "clb",
    category = "svcnet",
    namespaced,
    status = "CloudLoadBalancerStatus",
    derive = "PartialEq",
    doc = "GCE network load balancer state of one LoadBalancer Service (same name and namespace), written by svcnet-cloud-controller.",
    printcolumn(
        name = "IP",
        type_ = "string",
        json_path = ".status.ingressIP",
        description = "IP address of the GCE forwarding rule"
    ),
    printcolumn(
        name = "PORTS",
        type_ = "string",
        json_path = ".status.portsSummary",
        description = "Forwarded ports, e.g. 80/TCP,443/TCP"
    ),
    printcolumn(
        name = "NODES",
        type_ = "integer",
        json_path = ".status.nodeCount",
        description = "Instances in the target pool"
    ),
    printcolumn(
        name = "READY",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].status"#,
        description = "Status of the Ready condition"
    ),
    printcolumn(name = "AGE", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(
        name = "FORWARDING-RULE",
        type_ = "string",
        json_path = ".status.gce.forwardingRule.name",
        description = "Name of the GCE forwarding rule",
        priority = 1
    ),
    printcolumn(
        name = "ERROR",
        type_ = "string",
        json_path = ".status.lastError",
        description = "Last sync error, empty when the last sync succeeded",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CloudLoadBalancerSpec {
    /// Name of the Service this load balancer serves (equal to metadata.name).
    pub service_name: String,
    /// UID of that Service; a recreated Service with the same name gets a new object.
    #[serde(rename = "serviceUID")]
    pub service_uid: String,
}
