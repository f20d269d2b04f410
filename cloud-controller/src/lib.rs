//! svcnet-cloud-controller, pure domain: decides what GCE should hold for Services (external
//! target-pool load balancers), node routes and node initialisation, from Kubernetes objects and
//! the observed GCE objects. No I/O here: the controller binary fetches, calls [`lb::ensure::ensure`],
//! [`lb::delete::plan_delete`], [`routes::plan_routes`], [`nodes::plan_node_init`] and executes the
//! returned actions with the GCE client.
#![forbid(unsafe_code)]

pub mod config;
pub mod error;
pub mod gce;
pub mod lb;
pub mod naming;
pub mod nodes;
pub mod routes;

#[cfg(test)]
mod testutil;

pub use config::Config;
pub use error::{Error, Result};
