//! What can go wrong while building or starting a control plane.

use std::path::PathBuf;

/// Errors of this crate; each says which step failed and carries what a reader needs (stderr, a log tail).
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("building the control plane with {script}: {detail}")]
    Build { script: PathBuf, detail: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("generating certificates: {0}")]
    Certs(#[from] rcgen::Error),
    #[error("{component} did not become ready within {secs} s; last {lines} log lines of {log}:\n{tail}")]
    NotReady {
        component: &'static str,
        secs: u64,
        log: PathBuf,
        lines: usize,
        tail: String,
    },
    #[error("{component} exited during start-up ({status}); log {log}:\n{tail}")]
    Exited {
        component: &'static str,
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("`kubectl {args}` failed: {stderr}")]
    Kubectl { args: String, stderr: String },
    #[error("unexpected answer from the API: {0}")]
    Api(String),
    #[error("`{what}` failed ({status})")]
    Command { what: String, status: String },
    #[error("{what}: HTTP {status}: {body}")]
    Http { what: String, status: u16, body: String },
}

impl ClusterError {
    /// Runs `cmd` (inheriting stdout and stderr, so its output is in the test log) to a zero exit.
    pub(crate) fn run_ok(cmd: &mut std::process::Command, what: String) -> Result<(), ClusterError> {
        let status = cmd.status().map_err(ClusterError::io(what.clone()))?;
        if status.success() {
            Ok(())
        } else {
            Err(ClusterError::Command {
                what,
                status: status.to_string(),
            })
        }
    }

    /// An I/O error with the step it happened in.
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| ClusterError::Io { what, source }
    }
}
