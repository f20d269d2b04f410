//! What can go wrong running `ip` and friends.

/// A command could not be run, or ran and failed.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// The program could not be started or waited for (not installed, not permitted).
    #[error("run `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// The program ran and exited unsuccessfully; `stderr` is what it said (trimmed).
    #[error("`{command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
}
