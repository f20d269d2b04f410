//! The real svcnet binaries the control-plane parts start as processes (C1, C2, P4), and a child
//! handle that kills its process on drop (also while a panic unwinds).
//!
//! The binaries live next to `svcnet-bench` itself (`<target>/<profile>/`). Under `cargo run` /
//! `cargo test` (`CARGO` is set) they are built first with the same profile: Cargo does nothing when
//! they are fresh, and it holds no lock while the bench runs. `--bin-dir` points elsewhere and
//! skips the build.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::error::BenchError;

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
        let exe = std::env::current_exe().map_err(|e| BenchError::io("current_exe", e))?;
        // <target>/<profile>/svcnet-bench, or <target>/<profile>/deps/<test> under cargo test.
        let mut d = exe.parent().map(Path::to_path_buf).unwrap_or_default();
        if d.file_name().is_some_and(|n| n == "deps") {
            d.pop();
        }
        if let Ok(cargo) = std::env::var("CARGO") {
            let mut cmd = Command::new(cargo);
            cmd.arg("build").arg("-q");
            for n in names {
                cmd.args(["-p", n]);
            }
            if d.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            if let Some(target) = d.parent() {
                cmd.env("CARGO_TARGET_DIR", target);
            }
            // Under cargo test this process (or its parent) has the variables of the crate under test
            // (CARGO_MANIFEST_DIR, ...); ring's build script watches CARGO_MANIFEST_DIR, so passing them
            // on would rebuild the TLS stack and everything above it here and again in the next plain
            // cargo build.
            for (key, _) in std::env::vars_os() {
                let key = key.to_string_lossy();
                if [
                    "CARGO_MANIFEST_",
                    "CARGO_PKG_",
                    "CARGO_CRATE_",
                    "CARGO_BIN_",
                    "CARGO_PRIMARY_",
                    "CARGO_TARGET_TMPDIR",
                ]
                .iter()
                .any(|p| key.starts_with(p))
                {
                    cmd.env_remove(key.as_ref());
                }
            }
            eprintln!(
                "building {} ({:?} profile)",
                names.join(", "),
                d.file_name().unwrap_or_default()
            );
            let st = cmd
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .stdin(Stdio::null())
                .status()
                .map_err(|e| BenchError::io("cargo build", e))?;
            if !st.success() {
                return Err(BenchError::Check(format!("cargo build of {names:?} failed")));
            }
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
        cmd.stdout(Stdio::piped());
        let mut p = Proc::spawn(name, cmd)?;
        let Some(out) = p.child.stdout.take() else {
            return Err(BenchError::Check(format!("{name}: no stdout")));
        };
        let mut line = String::new();
        BufReader::new(out)
            .read_line(&mut line)
            .map_err(|e| BenchError::io(format!("{name}: first line"), e))?;
        match line.trim().strip_prefix("listening on ") {
            Some(addr) => Ok((p, addr.to_owned())),
            None => Err(BenchError::Check(format!(
                "{name}: unexpected first line {line:?} (see its stderr above)"
            ))),
        }
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

/// A log file for a child's stderr (in `dir`), and a second handle to read it back.
pub fn log_file(dir: &Path, name: &str) -> Result<(std::fs::File, PathBuf), BenchError> {
    let path = dir.join(format!("{name}.log"));
    let f =
        std::fs::File::create(&path).map_err(|e| BenchError::io(format!("create {}", path.display()), e))?;
    Ok((f, path))
}

/// Starts `kubectl proxy` and reads the address from its first line (`Starting to serve on ADDR`).
pub fn spawn_kubectl_proxy(cmd: &mut Command) -> Result<(Proc, String), BenchError> {
    cmd.stdout(Stdio::piped()).stdin(Stdio::null());
    let mut p = Proc::spawn("kubectl-proxy", cmd)?;
    let Some(out) = p.child.stdout.take() else {
        return Err(BenchError::Check("kubectl proxy: no stdout".into()));
    };
    let mut line = String::new();
    BufReader::new(out)
        .read_line(&mut line)
        .map_err(|e| BenchError::io("kubectl proxy: first line", e))?;
    match line.trim().strip_prefix("Starting to serve on ") {
        Some(addr) => Ok((p, addr.to_owned())),
        None => Err(BenchError::Check(format!(
            "kubectl proxy: unexpected first line {line:?}"
        ))),
    }
}
