//! Running a program, optionally inside a namespace (`ip netns exec`), with text on stdin and both
//! outputs captured.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::NetnsError;

/// What a finished command gave back.
#[derive(Clone, Debug)]
pub struct Ran {
    /// The command line, for messages.
    pub command: String,
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Stdout when the command succeeded, else [`NetnsError::Failed`] with its stderr.
    pub fn stdout_if_ok(self) -> Result<String, NetnsError> {
        if self.success {
            Ok(self.stdout)
        } else {
            Err(NetnsError::Failed {
                command: self.command,
                stderr: self.stderr.trim().to_owned(),
            })
        }
    }
}

/// `ip netns exec <ns> <args...>`, not yet started (the caller adds environment, stdio, spawns). With
/// no `args` the caller adds the program too, e.g. a binary's `Path` that need not be UTF-8.
pub fn command(ns: &str, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).args(args);
    c
}

/// Runs `args` inside namespace `ns` to completion (see [`run`]).
pub fn exec(ns: &str, args: &[&str], stdin: Option<&str>) -> Result<Ran, NetnsError> {
    let mut all = vec!["ip", "netns", "exec", ns];
    all.extend_from_slice(args);
    run(&all, stdin)
}

/// Runs `args[0]` with the rest as arguments to completion: `stdin` is written (then closed; `None`
/// gives it no stdin at all), stdout and stderr are captured. Err only when it cannot be run; a
/// failing exit status is `Ran { success: false, .. }`.
pub fn run(args: &[&str], stdin: Option<&str>) -> Result<Ran, NetnsError> {
    let command = args.join(" ");
    let spawn_err = |source| NetnsError::Spawn {
        command: command.clone(),
        source,
    };
    let (program, rest) = args.split_first().ok_or_else(|| {
        spawn_err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "empty command",
        ))
    })?;
    let mut child = Command::new(program)
        .args(rest)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_err)?;
    let input = child.stdin.take();
    // Written from another thread while this one drains the outputs: a large payload (an iptables
    // ruleset) must not deadlock against a child that writes before it has read all of its input.
    let out = std::thread::scope(|s| {
        if let (Some(mut pipe), Some(text)) = (input, stdin) {
            s.spawn(move || {
                // A child that exits without reading everything closes the pipe: its exit status
                // tells what happened, so the write error adds nothing.
                let _ = pipe.write_all(text.as_bytes());
            });
        }
        child.wait_with_output()
    })
    .map_err(spawn_err)?;
    Ok(Ran {
        command,
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}
