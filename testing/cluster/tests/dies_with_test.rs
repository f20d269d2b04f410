//! Nothing the crate starts outlives its test: not after a drop, and not after SIGKILL of the test
//! process, which runs no destructor (setpriv --pdeathsig; the dead owner's directory is swept).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use svcnet_testcluster::{Cluster, Options};

const CHILD_ENV: &str = "SVCNET_TESTCLUSTER_CHILD_OUT";

fn alive(pid: u32) -> bool {
    // A zombie (state Z) has already died; only its parent has not reaped it yet.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().to_owned()))
        .is_some_and(|rest| !rest.starts_with('Z'))
}

fn all_dead_within(pids: &[u32], limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if pids.iter().all(|p| !alive(*p)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn quick() -> Options {
    Options {
        controller_manager: false,
        ..Options::default()
    }
}

#[test]
fn drop_kills_everything_and_removes_the_directory() {
    let cluster = Cluster::start_with(quick()).unwrap();
    let pids = cluster.pids();
    let dir = cluster.dir().to_path_buf();
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|p| alive(*p)));
    drop(cluster);
    assert!(
        all_dead_within(&pids, Duration::from_secs(5)),
        "{pids:?} still alive"
    );
    assert!(!dir.exists(), "{} left behind", dir.display());
}

/// Run by [`sigkill_of_the_test_process_kills_the_control_plane`] as its child: starts a control plane,
/// reports its pids and directory, then waits to be killed.
#[test]
#[ignore = "a helper: run by sigkill_of_the_test_process_kills_the_control_plane"]
fn helper_holds_a_cluster_until_killed() {
    let Some(out) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let cluster = Cluster::start_with(quick()).unwrap();
    let pids: Vec<String> = cluster.pids().iter().map(u32::to_string).collect();
    let report = format!("{}\n{}\n", cluster.dir().display(), pids.join(" "));
    let tmp = PathBuf::from(&out).with_extension("tmp");
    std::fs::write(&tmp, report).unwrap();
    std::fs::rename(&tmp, &out).unwrap();
    std::thread::sleep(Duration::from_secs(600));
}

#[test]
fn sigkill_of_the_test_process_kills_the_control_plane() {
    let scratch = std::env::temp_dir().join(format!("svcnet-testcluster-sigkill-{}", std::process::id()));
    let _ = std::fs::remove_file(&scratch);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "helper_holds_a_cluster_until_killed",
            "--nocapture",
        ])
        .env(CHILD_ENV, &scratch)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    while !scratch.exists() {
        assert!(
            Instant::now() < deadline,
            "the child never reported its control plane"
        );
        assert!(child.try_wait().unwrap().is_none(), "the child exited early");
        std::thread::sleep(Duration::from_millis(200));
    }
    let report = std::fs::read_to_string(&scratch).unwrap();
    let _ = std::fs::remove_file(&scratch);
    let mut lines = report.lines();
    let dir = Path::new(lines.next().unwrap()).to_path_buf();
    let pids: Vec<u32> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{report}");
    assert!(pids.iter().all(|p| alive(*p)), "{report}");

    child.kill().unwrap(); // SIGKILL: no destructor runs in the child
    child.wait().unwrap();
    assert!(
        all_dead_within(&pids, Duration::from_secs(10)),
        "etcd/kube-apiserver {pids:?} outlived the SIGKILLed test process"
    );
    // What the child left on disk goes with the next sweep.
    assert!(dir.exists());
    let swept = svcnet_testcluster::sweep_dead();
    assert!(swept.contains(&dir), "{} not swept: {swept:?}", dir.display());
    assert!(!dir.exists());
}
