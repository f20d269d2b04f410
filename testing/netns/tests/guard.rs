//! The guard against the real `ip` tool (needs root: SKIPPED outside CI, a failure under CI=true).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use svcnet_netns::{Netns, list, netns_or_skip, owner_pid};

#[test]
fn namespace_is_named_isolated_and_deleted_on_drop() {
    let Some(ns) = netns_or_skip("guard") else {
        return;
    };
    let name = ns.name().to_owned();
    assert!(name.starts_with("svcnet-t-guard-"), "{name}");
    assert_eq!(owner_pid(&name), Some(std::process::id()));
    assert!(list().contains(&name));
    // Only its own loopback, up: nothing links it to the root namespace.
    let links = ns.ok(&["ip", "-o", "link", "show"]);
    let names: Vec<&str> = links.lines().filter_map(|l| l.split(": ").nth(1)).collect();
    assert_eq!(names, ["lo"], "{links}");
    assert!(links.contains("UP"), "{links}");
    drop(ns);
    assert!(!list().contains(&name), "{name} still listed after drop");
}

#[test]
fn exec_passes_stdin_and_returns_stdout_stderr_and_status() {
    let Some(ns) = netns_or_skip("exec") else {
        return;
    };
    let big = "rule\n".repeat(200_000);
    let (ok, out, err) = ns.exec(&["cat"], &big);
    assert!(ok, "{err}");
    assert_eq!(out.len(), big.len());
    let (ok, out, err) = ns.exec(&["sh", "-c", "echo out; echo err >&2; exit 3"], "");
    assert!(!ok);
    assert_eq!((out.as_str(), err.as_str()), ("out\n", "err\n"));
    let (ok, out, _) = ns.run(&["sh", "-c", "cat; echo done"]);
    assert!(ok);
    assert_eq!(out, "done\n", "no stdin reads as empty");
    let ran = svcnet_netns::exec(ns.name(), &["false"], None).unwrap();
    let err = ran.stdout_if_ok().unwrap_err().to_string();
    assert!(err.contains("false"), "{err}");
}

#[test]
fn namespace_is_deleted_when_the_test_panics() {
    let mut name = String::new();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Some(ns) = netns_or_skip("panics") else {
            return;
        };
        name = ns.name().to_owned();
        panic!("a failing assertion");
    }));
    if name.is_empty() {
        return; // skipped
    }
    assert!(result.is_err());
    assert!(!list().contains(&name), "{name} survived the panic");
}

#[test]
fn drop_kills_what_still_runs_inside() {
    let Some(ns) = netns_or_skip("procs") else {
        return;
    };
    let mut child = ns.command(&["sleep", "60"]).spawn().unwrap();
    // Wait until the sleep is inside (ip netns exec has exec'd it).
    let start = Instant::now();
    let pid = child.id().to_string();
    while !svcnet_netns::run(&["ip", "netns", "identify", &pid], None)
        .unwrap()
        .stdout
        .contains(ns.name())
    {
        assert!(start.elapsed() < Duration::from_secs(5), "sleep never entered");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(ns);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "sleep still runs after drop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success());
}

#[test]
fn a_program_that_cannot_start_is_an_error() {
    let err = svcnet_netns::run(&["/nonexistent/svcnet-ip"], None).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/svcnet-ip"), "{err}");
    assert!(svcnet_netns::run(&[], None).is_err());
}

#[test]
fn names_are_unique_across_guards() {
    let (Some(a), Some(b)) = (Netns::new("same").ok(), Netns::new("same").ok()) else {
        svcnet_netns::skip_or_panic("cannot create network namespaces");
        return;
    };
    assert_ne!(a.name(), b.name());
}
