//! Long-running lab processes: started inside a lab namespace with `ip netns exec`, detached (own process
//! group, output to `<dir>/logs/<name>.log`) so they outlive `svcnet-lab up`, and recorded in the state file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use std::os::unix::process::CommandExt;

/// A sibling binary of this executable (`cargo build` puts the workspace's binaries side by side).
pub fn sibling(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("current exe")?;
    let p = exe.with_file_name(name);
    if !p.exists() {
        bail!("{} missing: build it first (cargo build -p {name})", p.display());
    }
    Ok(p)
}

pub fn log_path(dir: &Path, name: &str) -> PathBuf {
    dir.join("logs").join(format!("{name}.log"))
}

/// Starts `bin args` in `ns`; returns the pid (`ip netns exec` execs the program, so it is the program's).
/// The log is appended to, so a restarted component keeps its history in one file.
pub fn spawn(dir: &Path, ns: &str, name: &str, bin: &Path, args: &[String]) -> Result<u32> {
    std::fs::create_dir_all(dir.join("logs"))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path(dir, name))?;
    let child = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .with_context(|| format!("spawn {name}"))?;
    Ok(child.id())
}

/// The current length of `name`'s log: pass it to [`wait_log`] to look only at what comes after.
pub fn log_len(dir: &Path, name: &str) -> usize {
    std::fs::metadata(log_path(dir, name)).map_or(0, |m| m.len() as usize)
}

/// Waits until `name`'s log (after byte `from`) contains `needle`; fails early (with the log) when the
/// process died.
pub fn wait_log(
    dir: &Path,
    name: &str,
    from: usize,
    pid: u32,
    needle: &str,
    timeout: Duration,
) -> Result<()> {
    let start = Instant::now();
    loop {
        let all = std::fs::read(log_path(dir, name)).unwrap_or_default();
        let text = String::from_utf8_lossy(all.get(from..).unwrap_or_default());
        if text.contains(needle) {
            return Ok(());
        }
        if !alive(pid) || start.elapsed() > timeout {
            bail!("{name} not ready ({needle:?}); log:\n{}", tail(&text, 40));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether `pid` has fully exited: gone, or a zombie whose threads are all gone too. A Go program's
/// main thread can be a zombie while its other threads still exit and hold its sockets, so "not alive"
/// is not yet "its port is free".
pub fn gone(pid: u32) -> bool {
    if alive(pid) {
        return false;
    }
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(true, |tasks| tasks.count() <= 1)
}

pub fn alive(pid: u32) -> bool {
    // A zombie (exited, not yet reaped by us) has state Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
        .unwrap_or(false)
}

/// Kills a recorded pid only if it still runs one of our programs (pids are reused after a crash).
pub fn kill(pid: u32) {
    signal(pid, "KILL");
}

/// Sends `sig` (`KILL`, `TERM`) to a recorded pid if it still runs one of our programs (svcnet's
/// binaries, or the control plane's from the svcnet build cache).
pub fn signal(pid: u32, sig: &str) {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    if String::from_utf8_lossy(&cmdline).contains("svcnet") {
        let _ = Command::new("kill")
            .args([&format!("-{sig}"), &pid.to_string()])
            .status();
    }
}

pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
