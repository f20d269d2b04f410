//! Long-running lab processes: started inside a lab namespace with `ip netns exec`, detached (own process
//! group, output to `<dir>/logs/<name>.log`) so they outlive `svcnet-lab up`, and recorded in the state file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;

/// A process by pid and start time: unlike the pid alone, the pair never names another process once the
/// pid is reused, so a recorded process can be killed safely long after it was started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    pub pid: u32,
    /// Clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start: u64,
}

impl Process {
    /// The process `pid` names now.
    pub fn of(pid: u32) -> Result<Process> {
        let start = start_time(pid).with_context(|| format!("no start time for pid {pid}"))?;
        Ok(Process { pid, start })
    }

    /// Whether it is still there: running, or exited and not yet reaped.
    pub fn exists(self) -> bool {
        start_time(self.pid) == Some(self.start)
    }
}

/// Field 22 of `/proc/<pid>/stat`, counted after the parenthesised command name (which may hold spaces
/// and parentheses itself); None once the pid is gone.
pub fn start_time(pid: u32) -> Option<u64> {
    stat_start_time(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn stat_start_time(stat: &str) -> Option<u64> {
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

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
    Ok(spawn_child(dir, ns, name, bin, args)?.id())
}

/// [`spawn`], keeping the handle: the caller that will stop the process can reap it then.
pub fn spawn_child(dir: &Path, ns: &str, name: &str, bin: &Path, args: &[String]) -> Result<Child> {
    std::fs::create_dir_all(dir.join("logs"))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path(dir, name))?;
    let child = svcnet_netns::command(ns, &[])
        .arg(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .with_context(|| format!("spawn {name}"))?;
    Ok(child)
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

/// Sends `sig` (`KILL`, `TERM`) to a recorded pid if it still runs one of our programs ([`ours`]).
pub fn signal(pid: u32, sig: &str) {
    if ours(pid) {
        send(pid, sig);
    }
}

/// Whether `pid` runs one of our programs (svcnet's binaries, or the control plane's from the svcnet
/// build cache).
pub fn ours(pid: u32) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&cmdline).contains("svcnet")
}

fn send(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status();
}

/// SIGKILLs `p` if it still is that process, then waits until it has fully exited: gone, or a zombie
/// left for its parent to reap (`p` is another process's child, so only that one can).
pub fn kill_recorded(p: Process, timeout: Duration) -> Result<()> {
    if p.exists() {
        send(p.pid, "KILL");
    }
    wait_until(timeout, || !p.exists() || gone(p.pid))
        .with_context(|| format!("pid {} still running after SIGKILL", p.pid))
}

/// SIGKILLs a child of this process and reaps it, so it leaves no zombie behind.
pub fn kill_child(child: &mut Child, timeout: Duration) -> Result<()> {
    // Fails only when it has exited already; reaping it below is all there is left to do.
    let _ = child.kill();
    let pid = child.id();
    // try_wait fails only once there is nothing left to reap.
    wait_until(timeout, || !matches!(child.try_wait(), Ok(None)))
        .with_context(|| format!("pid {pid} still running after SIGKILL"))
}

/// Polls `done` every 20 ms until it holds; Err after `timeout`.
pub fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> Result<()> {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > timeout {
            bail!("timed out after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests;
