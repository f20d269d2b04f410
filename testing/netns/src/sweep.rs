//! Namespaces by name: creating, listing and deleting them, and sweeping up those whose owner died.

use std::path::Path;

use crate::NetnsError;
use crate::name::owner_pid;

/// Creates namespace `name` with `lo` up and nothing else. No guard: the caller owns it, as a
/// [`crate::Netns`] or as one of the lab's namespaces that outlive their creator. When `lo` cannot be
/// set up the namespace is deleted again, so an error leaves nothing behind.
pub fn add(name: &str) -> Result<(), NetnsError> {
    crate::run(&["ip", "netns", "add", name], None)?.stdout_if_ok()?;
    crate::link::up(name, "lo").inspect_err(|_| delete(name))
}

/// Every network namespace name on the machine (`ip netns list`); empty when `ip` cannot run.
pub fn list() -> Vec<String> {
    let out = crate::run(&["ip", "netns", "list"], None)
        .ok()
        .filter(|r| r.success)
        .map(|r| r.stdout)
        .unwrap_or_default();
    // Lines look like `name (id: 3)` or just `name`.
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// Kills every process still inside `ns`, then deletes it. Best effort, never fails: it runs from
/// `Drop` and from cleanup paths where there is nothing better to do with an error. (Deleting only
/// unmounts the name: a process left inside would keep the namespace and its rules alive, unseen.)
pub fn delete(ns: &str) {
    if let Ok(r) = crate::run(&["ip", "netns", "pids", ns], None) {
        for pid in r.stdout.split_whitespace() {
            let _ = crate::run(&["kill", "-9", pid], None);
        }
    }
    let _ = crate::run(&["ip", "netns", "del", ns], None);
}

/// Deletes the namespaces made by this crate (or by the bench's older code) whose owning process no
/// longer exists: what a test killed by SIGKILL left behind, since its guards never dropped. Returns
/// the names deleted. A namespace of a live process is never touched (this assumes, as the tests do,
/// that every test runs in the machine's own pid namespace).
pub fn sweep_dead() -> Vec<String> {
    let mut gone = Vec::new();
    for name in list() {
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        delete(&name);
        // Another sweeper may have raced us to it: report only what is really gone.
        if !Path::new("/run/netns").join(&name).exists() {
            gone.push(name);
        }
    }
    gone
}
