//! svcnet-cloud-controller. The pure domain ([`lb`], [`routes`], [`nodes`], [`naming`], [`config`])
//! decides what GCE should hold for Services (external target-pool load balancers), node routes
//! and node initialisation, from Kubernetes objects and the observed GCE objects. The I/O edges
//! are [`gce`]'s `client`/`observe`/`exec` (official google-cloud-compute-v1 client) and
//! [`controllers`] (kube-runtime), wired by [`run`] behind [`leader`] election.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod cli;
mod clusterid;
mod config;
mod controllers;
mod error;
mod gce;
mod gceconf;
mod lb;
mod leader;
pub mod metadata;
mod metrics;
mod naming;
mod nodes;
mod objects;
mod routes;
pub mod run;

#[cfg(test)]
mod testutil;

pub use config::Config;
pub use error::{Error, Result};
