//! The real svcnet binaries the control-plane parts start as processes (C1, C2, P4), and a child
//! handle that kills its process on drop (also while a panic unwinds).
//!
//! The binaries live next to `svcnet-bench` itself (`<target>/<profile>/`). Under `cargo run` /
//! `cargo test` (`CARGO` is set) they are built first with the same profile: Cargo does nothing when
//! they are fresh, and it holds no lock while the bench runs. `--bin-dir` points elsewhere and
//! skips the build.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use svcnet_testcluster::announce;

use crate::error::BenchError;
use crate::netns::Netns;

pub const FAKE_GCE: &str = "svcnet-fake-gce";
pub const CONTROLLER: &str = "svcnet-cloud-controller";
pub const PROXY: &str = "svcnet-proxy";

/// Where the binaries are.
#[derive(Debug, Clone)]
pub struct Bins {
    pub dir: PathBuf,
}

impl Bins {
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// `dir` when given (no build); else the directory of this executable, after building the
    /// packages of `names` there when Cargo is available.
    pub fn locate(dir: Option<&Path>, names: &[&str]) -> Result<Bins, BenchError> {
        if let Some(d) = dir {
            return Bins::check(d.to_path_buf(), names);
        }
        // <target>/<profile>/svcnet-bench, or <target>/<profile>/deps/<test> under cargo test.
        let d = svcnet_testcluster::siblings::profile_dir()?;
        // Run by Cargo (cargo run, cargo test): build what is missing or stale; run by hand: use what is there.
        if std::env::var_os("CARGO").is_some() {
            eprintln!(
                "building {} ({:?} profile)",
                names.join(", "),
                d.file_name().unwrap_or_default()
            );
            svcnet_testcluster::siblings::build(names)?;
        }
        Bins::check(d, names)
    }

    fn check(dir: PathBuf, names: &[&str]) -> Result<Bins, BenchError> {
        for n in names {
            if !dir.join(n).exists() {
                return Err(BenchError::Check(format!(
                    "{n} not found in {} (build it, or pass --bin-dir)",
                    dir.display()
                )));
            }
        }
        Ok(Bins { dir })
    }
}

/// A child process killed (SIGKILL) and reaped on drop.
#[derive(Debug)]
pub struct Proc {
    pub name: String,
    pub child: Child,
}

impl Proc {
    pub fn spawn(name: &str, cmd: &mut Command) -> Result<Proc, BenchError> {
        let child = cmd
            .spawn()
            .map_err(|e| BenchError::io(format!("spawn {name}"), e))?;
        Ok(Proc {
            name: name.to_owned(),
            child,
        })
    }

    /// Spawns with stdout piped and reads the first line, `listening on ADDR`; returns ADDR.
    pub fn spawn_listening(name: &str, cmd: &mut Command) -> Result<(Proc, String), BenchError> {
        let (child, addr) = announce::spawn(cmd, announce::FAKE_GCE)?;
        Ok((
            Proc {
                name: name.to_owned(),
                child,
            },
            addr,
        ))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn alive(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_none()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs this binary's `load-api` inside `ns` against the plain-HTTP API at `api` (S Services x E
/// endpoints) and returns how long the load took, as the loader reports it.
pub fn load_api(ns: &Netns, api: &str, services: usize, endpoints: usize) -> Result<Duration, BenchError> {
    let exe = std::env::current_exe().map_err(|e| BenchError::io("current_exe", e))?;
    let out = ns
        .command(&exe.to_string_lossy())
        .args(["load-api", "--api", api])
        .args(["--services", &services.to_string()])
        .args(["--endpoints", &endpoints.to_string()])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| BenchError::io("load-api", e))?;
    if !out.status.success() {
        return Err(BenchError::Check(format!(
            "load-api failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(load_seconds(&String::from_utf8_lossy(&out.stdout)))
}

/// The loader prints its time in seconds as its last word; anything else reads as 0.
pub fn load_seconds(stdout: &str) -> Duration {
    Duration::from_secs_f64(
        stdout
            .split_whitespace()
            .last()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.0),
    )
}

/// A log file for a child's stderr (in `dir`), and a second handle to read it back.
pub fn log_file(dir: &Path, name: &str) -> Result<(std::fs::File, PathBuf), BenchError> {
    let path = dir.join(format!("{name}.log"));
    let f =
        std::fs::File::create(&path).map_err(|e| BenchError::io(format!("create {}", path.display()), e))?;
    Ok((f, path))
}

/// Starts `kubectl proxy` and reads the address from its first line (`Starting to serve on ADDR`).
pub fn spawn_kubectl_proxy(cmd: &mut Command) -> Result<(Proc, String), BenchError> {
    let (child, addr) = announce::spawn(cmd.stdin(Stdio::null()), announce::KUBECTL_PROXY)?;
    Ok((
        Proc {
            name: "kubectl-proxy".to_owned(),
            child,
        },
        addr,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_time_is_the_loaders_last_word() {
        assert_eq!(
            load_seconds("loaded 10 services x 2 endpoints in 2.500\n"),
            Duration::from_millis(2500)
        );
        assert_eq!(load_seconds(""), Duration::ZERO, "no output: 0");
        assert_eq!(load_seconds("loaded in ?\n"), Duration::ZERO, "not a number: 0");
    }
}
