//! svcnet CustomResourceDefinitions: the `CloudLoadBalancer` type (kube derive + schemars), its
//! status helpers, and the renderer behind the `svcnet-crds` generator of `manifests/crds`.
#![forbid(unsafe_code)]

pub mod cloud_load_balancer;
pub mod conditions;
pub mod manifests;
pub mod owner;
pub mod ports;
pub mod status;
pub mod status_patch;

pub use cloud_load_balancer::{CloudLoadBalancer, CloudLoadBalancerSpec, GROUP, VERSION};
pub use conditions::{ConditionStatus, ConditionType, new_condition};
pub use owner::ForServiceError;
pub use ports::{PortStatus, format_ports};
pub use status::{CloudLoadBalancerStatus, GceResourceRef, GceResources, TargetPoolStatus};
