use std::process::{Child, Command};
use std::time::Duration;

use super::*;

fn sleeper() -> Child {
    Command::new("sleep").arg("60").spawn().unwrap()
}

#[test]
fn start_time_is_read_past_any_command_name() {
    // Fields 3.. after the name: state, ppid, ..., field 22 (the 20th after the name) is the start time.
    let after: Vec<String> = (3..=25).map(|f| f.to_string()).collect();
    let stat = format!("4242 (a) b (c)) {}", after.join(" "));
    assert_eq!(stat_start_time(&stat), Some(22));
    assert_eq!(stat_start_time("4242 (x) S 1"), None);
    assert_eq!(stat_start_time(""), None);
}

#[test]
fn a_process_is_named_by_pid_and_start_time() {
    let mut child = sleeper();
    let p = Process::of(child.id()).unwrap();
    assert!(p.exists());
    assert!(
        !Process {
            start: p.start + 1,
            ..p
        }
        .exists()
    );
    kill_child(&mut child, Duration::from_secs(5)).unwrap();
    // Reaped: not even a zombie is left.
    assert!(!p.exists());
    assert_eq!(start_time(p.pid), None);
}

#[test]
fn a_recorded_pid_now_naming_another_process_is_not_killed() {
    let mut child = sleeper();
    let p = Process::of(child.id()).unwrap();
    let stale = Process {
        start: p.start.saturating_sub(1),
        ..p
    };
    kill_recorded(stale, Duration::from_secs(5)).unwrap();
    assert!(child.try_wait().unwrap().is_none(), "a reused pid was killed");
    kill_child(&mut child, Duration::from_secs(5)).unwrap();
}

#[test]
fn a_recorded_process_is_killed_and_waited_for() {
    let mut child = sleeper();
    let p = Process::of(child.id()).unwrap();
    kill_recorded(p, Duration::from_secs(5)).unwrap();
    // Exited: what is left is the zombie only its parent (this test) can reap.
    assert!(!alive(p.pid));
    assert!(!child.wait().unwrap().success());
    assert!(!p.exists());
}
