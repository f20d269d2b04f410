//! Tearing pods down leaves no process behind: a pod the kubelet removes (a scale-down) has its hostname
//! server killed and reaped, and `svcnet-lab down` kills the servers of the pods still running, though
//! their namespaces were made inside the agent's own mount namespace, where `down` cannot see them by
//! name. The servers are found by their command line (`serve-hostname --name <pod>`) and followed by pid
//! and start time, independently of what the lab records about them.
//!
//! Local: needs root (network namespaces): prints SKIPPED outside CI, fails under CI=true.
#![allow(clippy::unwrap_used)]

mod support;

use std::process::Command;
use std::time::Duration;

use support::lab::Lab;
use support::{Cluster, wait_for};

/// A process named by pid and start time (clock ticks after boot), so a reused pid is not mistaken for it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Process {
    pid: u32,
    start: u64,
}

/// The start time in `/proc/<pid>/stat` (field 22, counted after the parenthesised command name, which
/// may itself hold spaces); None once the pid is gone. A zombie still has it: exited but not reaped.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

impl Process {
    /// Still there, running or a zombie.
    fn exists(self) -> bool {
        start_time(self.pid) == Some(self.start)
    }
}

/// The hostname server of pod `name`: a process whose command line is `... serve-hostname --name <name>`.
fn server_of(name: &str) -> Option<Process> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let ours = args
            .windows(3)
            .any(|w| w[0] == b"serve-hostname" && w[1] == b"--name" && w[2] == name.as_bytes());
        if !ours {
            return None;
        }
        Some(Process {
            pid,
            start: start_time(pid)?,
        })
    })
}

/// Kills, on every path out of the test, the servers the lab failed to stop (only while pid and start
/// time still name them), so a failing run leaves nothing on the machine either.
struct Leftovers(Vec<Process>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for p in self.0.iter().filter(|p| p.exists()) {
            let _ = Command::new("kill").args(["-KILL", &p.pid.to_string()]).status();
        }
    }
}

#[test]
fn pod_processes_are_killed_and_reaped_on_teardown() {
    let Some(mut lab) = Lab::up(1) else {
        return;
    };
    lab.run_pods("teardown", 2, 9376);
    let servers: Vec<(String, Process)> = lab
        .pods("teardown")
        .into_iter()
        .map(|(name, _, _)| {
            let p = server_of(&name).unwrap_or_else(|| panic!("no hostname server runs for pod {name}"));
            (name, p)
        })
        .collect();
    let leftovers = Leftovers(servers.iter().map(|(_, p)| *p).collect());
    assert_eq!(servers.len(), 2, "{servers:?}");

    // The kubelet's own teardown: the pod's server is its child, so it must be reaped, not left a zombie.
    lab.scale("teardown", 1);
    let kept: Vec<String> = lab.pods("teardown").into_iter().map(|p| p.0).collect();
    let (removed, kept): (Vec<_>, Vec<_>) = servers.iter().partition(|(name, _)| !kept.contains(name));
    assert_eq!((removed.len(), kept.len()), (1, 1), "{servers:?}");
    let (name, gone) = removed[0];
    wait_for(
        &format!("the server of removed pod {name} (pid {}) reaped", gone.pid),
        Duration::from_secs(10),
        || (!gone.exists()).then_some(()),
    );
    let (name, last) = kept[0];
    assert!(
        last.exists(),
        "the server of pod {name} stopped with the other pod"
    );

    // `down` with a pod still running: its server must go too, not outlive its deleted namespace.
    lab.down();
    wait_for(
        &format!("the server of pod {name} (pid {}) gone after down", last.pid),
        Duration::from_secs(10),
        || (!last.exists()).then_some(()),
    );
    drop(leftovers);
}
