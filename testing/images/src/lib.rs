//! The project's own Docker engine from Rust, for the image test (and the kind e2e run): a thin guard
//! over `testing/engine/dockerd.sh`, which starts dockerd in a network namespace of its own and sweeps
//! engines whose owner died; and `make images`'s script (`testing/engine/images.sh`) run against it.
//!
//! ```no_run
//! let engine = svcnet_images::Engine::start()?;          // dockerd in `svcnet-engine-<pid>-<n>`
//! let bins = std::path::Path::new("target/debug");         // svcnet-proxy, svcnet-cloud-controller
//! let built = engine.build_images(bins, "svcnet-test", "t")?; // the local way: `NAME SIZE` lines
//! let out = engine.docker_ok(&["run", "--rm", "svcnet-test/svcnet-proxy:t", "--version"])?;
//! // drop(engine): containers removed, dockerd stopped, namespace deleted
//! # Ok::<(), svcnet_images::EngineError>(())
//! ```
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Why the engine or a docker command failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("running {what}: {source}")]
    Spawn { what: String, source: std::io::Error },
    #[error("{what} failed ({status}): {stderr}{stdout}")]
    Failed {
        what: String,
        status: String,
        stdout: String,
        stderr: String,
    },
    #[error("dockerd.sh start printed no engine name and DOCKER_HOST: {0}")]
    Started(String),
}

/// `testing/engine` in this repository.
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine")
}

/// The docker CLI that matches the engine's dockerd (Debian's when a newer static one comes first on
/// PATH, as dockerd.sh picks).
pub fn docker_cli() -> PathBuf {
    let debian = Path::new("/usr/bin/docker");
    if debian.exists() {
        debian.to_path_buf()
    } else {
        PathBuf::from("docker")
    }
}

fn run(cmd: &mut Command, what: String) -> Result<String, EngineError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|source| EngineError::Spawn {
            what: what.clone(),
            source,
        })?;
    ok(out, what)
}

fn ok(out: Output, what: String) -> Result<String, EngineError> {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Ok(stdout);
    }
    Err(EngineError::Failed {
        what,
        status: out.status.to_string(),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Stops every engine whose owner process is gone (`dockerd.sh sweep`).
pub fn sweep() -> Result<String, EngineError> {
    let script = scripts_dir().join("dockerd.sh");
    run(
        Command::new("bash").arg(script).arg("sweep"),
        "dockerd.sh sweep".into(),
    )
}

/// A running engine owned by this process: stopped (containers removed, namespace deleted) on drop;
/// after a SIGKILL, by the next `dockerd.sh start` or `sweep`.
#[derive(Debug)]
pub struct Engine {
    name: String,
    host: String,
}

impl Engine {
    /// Starts one owned by this process (waiting for the data root while another engine holds it).
    /// Needs root.
    pub fn start() -> Result<Engine, EngineError> {
        Engine::start_with(std::process::id(), None)
    }

    /// Starts one owned by process `owner`, with its data root in `data` (default: the machine's
    /// cache, SVCNET_ENGINE_DATA or /var/cache/svcnet/engine).
    pub fn start_with(owner: u32, data: Option<&Path>) -> Result<Engine, EngineError> {
        let script = scripts_dir().join("dockerd.sh");
        let mut cmd = Command::new("bash");
        cmd.arg(script)
            .arg("start")
            .arg(owner.to_string())
            .stderr(Stdio::piped());
        if let Some(data) = data {
            cmd.env("SVCNET_ENGINE_DATA", data);
        }
        let out = run(&mut cmd, "dockerd.sh start".into())?;
        let mut lines = out.lines();
        let name = lines.next().unwrap_or_default().trim().to_owned();
        let host = lines
            .next()
            .and_then(|l| l.trim().strip_prefix("DOCKER_HOST="))
            .map(str::to_owned);
        match host {
            Some(host) if !name.is_empty() => Ok(Engine { name, host }),
            _ => Err(EngineError::Started(out)),
        }
    }

    /// The engine's name, which is also its network namespace's.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `unix://.../docker.sock`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// dockerd's pid, from its pid file.
    pub fn dockerd_pid(&self) -> Option<u32> {
        let dir = Path::new(&self.host.trim_start_matches("unix://"))
            .parent()
            .map(Path::to_path_buf)?;
        std::fs::read_to_string(dir.join("dockerd.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// `docker args` against this engine, not yet started.
    pub fn docker(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(docker_cli());
        cmd.env("DOCKER_HOST", &self.host).args(args);
        cmd
    }

    /// Runs `docker args`; its stdout, or the error with both outputs.
    pub fn docker_ok(&self, args: &[&str]) -> Result<String, EngineError> {
        run(&mut self.docker(args), format!("docker {}", args.join(" ")))
    }

    /// Builds both images with `make images`'s script, the local way, from the binaries in `bins`
    /// (`svcnet-proxy`, `svcnet-cloud-controller`): what it printed (`NAME SIZE` lines).
    pub fn build_images(&self, bins: &Path, prefix: &str, tag: &str) -> Result<String, EngineError> {
        let script = scripts_dir().join("images.sh");
        run(
            Command::new("bash")
                .arg(script)
                .env("DOCKER_HOST", &self.host)
                .env("DOCKER", docker_cli())
                .env("SVCNET_ENGINE_STARTED", "1")
                .env("SVCNET_IMAGES_MODE", "local")
                .env("SVCNET_IMAGE_BINARIES", bins)
                .env("IMAGE_PREFIX", prefix)
                .env("IMAGE_TAG", tag)
                .stderr(Stdio::piped()),
            "testing/engine/images.sh".into(),
        )
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let script = scripts_dir().join("dockerd.sh");
        let _ = Command::new("bash")
            .arg(script)
            .arg("stop")
            .arg(&self.name)
            .stdin(Stdio::null())
            .status();
    }
}
