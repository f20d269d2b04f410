//! The real Kubernetes control plane for svcnet's tests (issue 16): etcd, kube-apiserver and
//! kube-controller-manager built from the pinned recipe in `testing/k8s/` and started per test on a
//! loopback address of their own.
//!
//! ```no_run
//! # fn main() -> Result<(), svcnet_testcluster::ClusterError> {
//! use svcnet_testcluster::{Cluster, Component};
//! let cluster = Cluster::start()?;                       // builds on first use, then ~seconds
//! cluster.kubectl_ok(&["get", "nodes"])?;                // the pinned kubectl, as admin
//! let kc = cluster.component_kubeconfig(Component::Proxy)?; // the proxy's ServiceAccount + RBAC
//! # Ok(()) }
//! ```
//!
//! - TLS everywhere on the API (a CA per instance), RBAC and Node authorization on, ServiceAccount tokens
//!   signed by the instance's key; kube-controller-manager runs the controllers of [`CONTROLLERS`] with
//!   `--cloud-provider=external` and node IPAM.
//! - Everything started dies with the test: drop, panic, and SIGKILL of the test process
//!   (`setpriv --pdeathsig`, plus a sweep of dead owners' instance directories).
//!
//! Beside it, the helpers the whole harness shares, defined once: [`http`] (a blocking HTTP/1.1
//! client), [`wait`] (polling), [`kubeconfig`], [`siblings`] (building other workspace packages'
//! binaries for a test), [`announce`] (starting a server that prints its address), [`gcloud`]
//! (the real gcloud pointed at the fake GCE) and [`python`] (cached venvs of PyPI packages).
#![forbid(unsafe_code)]

pub mod announce;
mod binaries;
mod certs;
mod cluster;
mod components;
mod error;
mod etcd;
mod flags;
pub mod gcloud;
pub mod http;
pub mod kubeconfig;
mod kubectl;
mod plan;
pub mod python;
pub mod siblings;
mod spawn;
mod sweep;
pub mod wait;

pub use binaries::{Binaries, binaries, build_script, kubectl_program};
pub use cluster::Cluster;
pub use components::{Component, NAMESPACE, manifests_dir};
pub use error::ClusterError;
pub use flags::{CONTROLLERS, NODE_LIFECYCLE, Options};
pub use kubectl::Kubectl;
pub use plan::{Launch, Plan};
pub use sweep::sweep_dead;
