//! The error type of svcnet-core.

use std::net::SocketAddr;

/// Everything that can go wrong in the shared plumbing.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error("reading kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("invalid --master URL {url:?}: {reason}")]
    InvalidMaster { url: String, reason: String },
    #[error(
        "no Kubernetes configuration found: not in a cluster ({in_cluster}) and no usable kubeconfig ({kubeconfig})"
    )]
    NoConfig { in_cluster: String, kubeconfig: String },
    #[error("building the Kubernetes client: {0}")]
    Client(#[from] kube::Error),
    #[error("invalid log filter {filter:?}: {reason}")]
    LogFilter { filter: String, reason: String },
    #[error("installing the log subscriber: {0}")]
    LogInit(String),
    #[error("binding {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("serving HTTP: {0}")]
    Serve(std::io::Error),
}
