//! The real kubectl (the pinned build's, [`crate::kubectl_program`]), pointed at one kubeconfig with its own discovery cache and HOME so
//! that parallel instances and the developer's ~/.kube never mix; inside the instance's network
//! namespace when it has one.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::{ClusterError, kubectl_program};

/// How to run kubectl against one instance as one user.
#[derive(Clone, Debug)]
pub struct Kubectl {
    pub kubeconfig: PathBuf,
    /// The instance dir: discovery cache and HOME.
    pub state: PathBuf,
    /// `ip netns exec <netns> kubectl ...` when the control plane lives in a namespace.
    pub netns: Option<String>,
}

impl Kubectl {
    /// The raw output (the caller decides what failure means).
    pub fn run(&self, args: &[&str]) -> Result<Output, ClusterError> {
        self.command(args)
            .stdin(Stdio::null())
            .output()
            .map_err(ClusterError::io(format!("running kubectl {}", args.join(" "))))
    }

    /// Stdout when kubectl succeeded, else [`ClusterError::Kubectl`] with its stderr.
    pub fn ok(&self, args: &[&str]) -> Result<String, ClusterError> {
        checked(args, self.run(args)?)
    }

    /// As [`Kubectl::ok`], with `stdin` written to kubectl (`apply -f -`).
    pub fn ok_stdin(&self, args: &[&str], stdin: &str) -> Result<String, ClusterError> {
        let what = format!("running kubectl {}", args.join(" "));
        let mut child = self
            .command(args)
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
        checked(args, child.wait_with_output().map_err(ClusterError::io(what))?)
    }

    /// The command, not yet run (the caller sets stdio).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(kubectl_program());
                c
            }
            None => Command::new(kubectl_program()),
        };
        c.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.state.join("kube-cache"))
            .env("HOME", &self.state);
        c
    }
}

fn checked(args: &[&str], out: Output) -> Result<String, ClusterError> {
    if !out.status.success() {
        return Err(ClusterError::Kubectl {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
