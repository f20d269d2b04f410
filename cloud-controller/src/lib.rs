//! svcnet-cloud-controller. The pure domain ([`lb`], [`routes`], [`nodes`], [`naming`], [`config`])
//! decides what GCE should hold for Services (external target-pool load balancers), node routes
//! and node initialisation, from Kubernetes objects and the observed GCE objects. The I/O edges
//! are [`gce`]'s `client`/`observe`/`exec` (official google-cloud-compute-v1 client) and
//! [`controllers`] (kube-runtime), wired by [`run`] behind [`leader`] election.
#![forbid(unsafe_code)]

pub mod cli;
pub mod clusterid;
pub mod config;
pub mod controllers;
pub mod error;
pub mod gce;
pub mod gceconf;
pub mod lb;
pub mod leader;
pub mod metadata;
pub mod metrics;
pub mod naming;
pub mod nodes;
pub mod objects;
pub mod routes;
pub mod run;

#[cfg(test)]
mod testutil;

pub use config::Config;
pub use error::{Error, Result};
