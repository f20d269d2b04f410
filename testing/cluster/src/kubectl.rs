//! The real kubectl (the machine's), pointed at one kubeconfig with its own discovery cache and HOME so
//! that parallel instances and the developer's ~/.kube never mix.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::ClusterError;

/// `kubectl args` against `kubeconfig`, `state` holding its cache; the raw output.
pub fn run(kubeconfig: &Path, state: &Path, args: &[&str]) -> Result<Output, ClusterError> {
    command(kubeconfig, state, args)
        .stdin(Stdio::null())
        .output()
        .map_err(ClusterError::io(format!("running kubectl {}", args.join(" "))))
}

/// As [`run`], stdout when kubectl succeeded, else [`ClusterError::Kubectl`] with its stderr.
pub fn ok(kubeconfig: &Path, state: &Path, args: &[&str]) -> Result<String, ClusterError> {
    let out = run(kubeconfig, state, args)?;
    if !out.status.success() {
        return Err(ClusterError::Kubectl {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// As [`ok`], with `stdin` written to kubectl (`apply -f -`).
pub fn ok_stdin(kubeconfig: &Path, state: &Path, args: &[&str], stdin: &str) -> Result<String, ClusterError> {
    let what = format!("running kubectl {}", args.join(" "));
    let mut child = command(kubeconfig, state, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(ClusterError::io(what.clone()))?;
    if let Some(mut input) = child.stdin.take() {
        input
            .write_all(stdin.as_bytes())
            .map_err(ClusterError::io(what.clone()))?;
    }
    let out = child.wait_with_output().map_err(ClusterError::io(what))?;
    if !out.status.success() {
        return Err(ClusterError::Kubectl {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The command, not yet run (the caller may add stdin).
pub fn command(kubeconfig: &Path, state: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("kubectl");
    c.args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", state.join("kube-cache"))
        .env("HOME", state);
    c
}
