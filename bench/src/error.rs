//! The one error type of the bench's steps: which step failed (I/O, a namespace, the in-namespace
//! agent, iptables-restore, a failed check, the test harness) and with what message.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum BenchError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A network namespace step failed (not root, no `ip`, no dummy module...).
    #[error("network namespace: {0}")]
    Netns(String),
    /// The in-namespace agent misbehaved or reported an error.
    #[error("agent in {netns}: {message}")]
    Agent { netns: String, message: String },
    #[error("iptables-restore in {netns}: {message}")]
    Restore { netns: String, message: String },
    #[error("{0}")]
    Check(String),
    /// An HTTP call or control-plane step of the test harness failed.
    #[error(transparent)]
    Harness(#[from] svcnet_testcluster::ClusterError),
}

impl BenchError {
    pub fn io(what: impl Into<String>, source: std::io::Error) -> BenchError {
        BenchError::Io {
            what: what.into(),
            source,
        }
    }
}

/// A namespace or wiring step of `svcnet-netns` (creating, `ip`, a sysctl) failed.
impl From<svcnet_netns::NetnsError> for BenchError {
    fn from(e: svcnet_netns::NetnsError) -> Self {
        BenchError::Netns(e.to_string())
    }
}
