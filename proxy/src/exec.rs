//! Running the external tools (iptables*, nft, conntrack, ip, nfacct): stdin piped, bounded in time, a
//! missing binary named as such, and the one error type for all of them ([`ToolError`]). Both modes
//! and the node tools use it; it belongs to neither mode.
//!
//! Never imports: crate::iptables, crate::nftables.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use thiserror::Error;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// A command slower than this is killed: iptables waits at most 5 s for the xtables lock (`-w 5`),
/// so anything longer is hung. iptables-restore has its own, configurable limit
/// (`--iptables-restore-timeout`) because its time grows with the payload.
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Error)]
/// A tool that could not run, failed, hung, or (nftables netlink) was refused by the kernel.
pub enum ToolError {
    #[error("{program} is not installed (not found on PATH)")]
    NotInstalled { program: String },
    #[error("{program}: cannot run: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("{program} {args}: exit {code:?}: {stderr}")]
    Failed {
        program: String,
        args: String,
        code: Option<i32>,
        stderr: String,
    },
    #[error("{program}: timed out after {after:?}")]
    Timeout { program: String, after: Duration },
    /// The nftables netlink writer: the kernel refused a batch (naming the step) or did not answer.
    #[error("nftables netlink: {0}")]
    Netlink(String),
}

/// The output of one finished command.
#[derive(Clone, Debug, Default)]
pub(crate) struct Output {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// A missing binary is named as such: "not found" from spawn says nothing about netfilter.
pub(crate) fn spawn_error(program: &str, source: std::io::Error) -> ToolError {
    if source.kind() == std::io::ErrorKind::NotFound {
        ToolError::NotInstalled {
            program: program.to_string(),
        }
    } else {
        ToolError::Spawn {
            program: program.to_string(),
            source,
        }
    }
}

/// Runs `program args` with optional stdin, bounded by [`COMMAND_TIMEOUT`].
pub(crate) async fn exec(program: &str, args: &[&str], stdin: Option<&str>) -> Result<Output, ToolError> {
    exec_within(program, args, stdin, COMMAND_TIMEOUT).await
}

/// Runs `program args` with optional stdin; killed after `limit`.
pub(crate) async fn exec_within(
    program: &str,
    args: &[&str],
    stdin: Option<&str>,
    limit: Duration,
) -> Result<Output, ToolError> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|source| spawn_error(program, source))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A write error means the tool exited early; its exit status tells why.
        let _ = pipe.write_all(text.as_bytes()).await;
        drop(pipe);
    }
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .map_err(|_| ToolError::Timeout {
            program: program.to_string(),
            after: limit,
        })?
        .map_err(|source| ToolError::Spawn {
            program: program.to_string(),
            source,
        })?;
    Ok(Output {
        success: out.status.success(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Like [`exec`], but a non-zero exit is an error.
pub(crate) async fn exec_ok(program: &str, args: &[&str], stdin: Option<&str>) -> Result<Output, ToolError> {
    exec_ok_within(program, args, stdin, COMMAND_TIMEOUT).await
}

/// Like [`exec_within`], but a non-zero exit is an error.
pub(crate) async fn exec_ok_within(
    program: &str,
    args: &[&str],
    stdin: Option<&str>,
    limit: Duration,
) -> Result<Output, ToolError> {
    let out = exec_within(program, args, stdin, limit).await?;
    if out.success {
        Ok(out)
    } else {
        Err(ToolError::Failed {
            program: program.to_string(),
            args: args.join(" "),
            code: out.code,
            stderr: out.stderr.trim().to_string(),
        })
    }
}

/// Whether `name` is an executable file in a `PATH` directory.
pub(crate) fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| is_executable(&dir.join(name))))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
