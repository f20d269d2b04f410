//! The sweep against the real `ip` tool (needs root: SKIPPED outside CI, a failure under CI=true).
#![allow(clippy::unwrap_used)]

use std::process::Command;

use svcnet_netns::{list, netns_or_skip, sweep_dead};

/// A pid that existed a moment ago and is gone now (reaped).
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn sweep_deletes_leftovers_of_dead_owners_only() {
    let Some(live) = netns_or_skip("sweep-live") else {
        return;
    };
    // What a SIGKILLed test would leave: our naming, an owner pid that is gone. The tag carries this
    // process's pid so no parallel test run can make the same names.
    let me = std::process::id();
    let dead = dead_pid();
    let leftover = format!("svcnet-t-sweep{me}-{dead}-0");
    let old_bench = format!("svcnet-bench-{dead}-{me}-sweep");
    for name in [&leftover, &old_bench] {
        let ok = Command::new("ip").args(["netns", "add", name]).status().unwrap();
        assert!(ok.success(), "ip netns add {name}");
    }
    let gone = sweep_dead();
    let now = list();
    // Clean up first, so a failed assertion below leaves nothing behind.
    for name in [&leftover, &old_bench] {
        svcnet_netns::delete(name);
    }
    assert!(gone.contains(&leftover), "{gone:?}");
    assert!(gone.contains(&old_bench), "{gone:?}");
    assert!(!now.contains(&leftover) && !now.contains(&old_bench), "{now:?}");
    assert!(
        !gone.iter().any(|g| g == live.name()),
        "swept a live namespace: {gone:?}"
    );
    assert!(now.iter().any(|n| n == live.name()));
}
