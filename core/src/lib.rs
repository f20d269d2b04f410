//! svcnet-core: plumbing shared by svcnet-proxy and svcnet-cloud-controller.
//!
//! One concept per module: kube client setup, logging, the HTTP server helper, the metrics
//! endpoint, shutdown, retries, and the Service views both binaries need.
#![forbid(unsafe_code)]

pub mod error;
pub mod http;
pub mod kube_client;
pub mod logging;
pub mod metrics;
pub mod retry;
pub mod service;
pub mod shutdown;
pub mod tls;

pub use error::CoreError;
