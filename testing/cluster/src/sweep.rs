//! Instance directories and the dead-owner sweep.
//!
//! Every instance keeps its state (certificates, etcd data, logs, kubeconfigs) in
//! `<tmp>/svcnet-testcluster/<owner pid>-<n>/` with a `pids` file of the processes it started. Dropping the
//! [`crate::Cluster`] removes it; a test process killed by a signal drops nothing, so each new instance
//! first sweeps the directories whose owner pid is gone: their processes are killed (only those whose
//! command line names that directory, so a reused pid is never hit) and the directory is deleted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::ClusterError;

/// Where instance directories live.
pub fn root() -> PathBuf {
    std::env::temp_dir().join("svcnet-testcluster")
}

/// A fresh, empty directory for one instance of this process.
pub fn new_instance_dir() -> Result<PathBuf, ClusterError> {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = root().join(format!("{}-{n}", std::process::id()));
    // A previous process with our pid (the pid was reused) may have left one behind.
    if dir.exists() {
        kill_recorded(&dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
    std::fs::create_dir_all(&dir).map_err(ClusterError::io(format!("creating {}", dir.display())))?;
    Ok(dir)
}

/// The pid embedded in an instance directory's name.
pub fn owner_pid(name: &str) -> Option<u32> {
    name.split_once('-')?.0.parse().ok()
}

/// Kills what dead owners left and deletes their directories; returns the directories removed.
pub fn sweep_dead() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root()) else {
        return Vec::new();
    };
    let mut gone = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let dir = e.path();
        kill_recorded(&dir);
        if std::fs::remove_dir_all(&dir).is_ok() {
            gone.push(dir);
        }
    }
    gone
}

/// SIGKILLs each pid of `dir/pids` whose command line still mentions `dir`.
pub fn kill_recorded(dir: &Path) {
    let Ok(pids) = std::fs::read_to_string(dir.join("pids")) else {
        return;
    };
    let needle = dir.to_string_lossy().into_owned();
    for pid in pids.split_whitespace() {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            let _ = std::process::Command::new("kill").args(["-KILL", pid]).status();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_reads_the_prefix() {
        assert_eq!(owner_pid("1234-0"), Some(1234));
        assert_eq!(owner_pid("x-0"), None);
        assert_eq!(owner_pid("1234"), None);
    }
}
