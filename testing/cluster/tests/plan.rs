//! A Plan started by its caller (as the lab will: its processes outlive the command that starts them):
//! the written files and command lines are enough to run a working, RBAC-enforcing control plane.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use svcnet_testcluster::{Component, Options, Plan, binaries};

/// Kills what the test started, also when an assertion fails.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_plan_started_by_its_caller_serves_with_rbac() {
    let bins = binaries().unwrap();
    let dir = std::env::temp_dir().join(format!("svcnet-testcluster-plan-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // 127.254.x.y: outside what Cluster picks at random only by chance, and unique per test process.
    let pid = std::process::id();
    let ip = IpAddr::V4(Ipv4Addr::new(127, 254, (pid >> 8) as u8, (pid as u8).max(1)));
    let plan = Plan::prepare(
        &bins,
        &dir,
        ip,
        Options {
            controller_manager: false,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(plan.controller_manager.is_none());
    let mut children = Children(Vec::new());
    for launch in [&plan.etcd, &plan.apiserver] {
        let (program, args) = plan.command_line(launch);
        let log = std::fs::File::create(&launch.log).unwrap();
        children.0.push(
            Command::new(program)
                .args(args)
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        );
    }
    let kubectl = plan.admin_kubectl();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !kubectl
        .run(&["get", "--raw", "/readyz"])
        .unwrap()
        .status
        .success()
    {
        assert!(
            Instant::now() < deadline,
            "not ready: {}",
            std::fs::read_to_string(&plan.apiserver.log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let proxy = plan.component_kubeconfig(Component::Proxy).unwrap();
    let who = plan
        .kubectl_with(&proxy)
        .ok(&["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"])
        .unwrap();
    assert_eq!(who, "system:serviceaccount:kube-system:svcnet-proxy");
    let denied = plan.kubectl_with(&proxy).run(&["get", "pods", "-A"]).unwrap();
    assert!(!denied.status.success(), "svcnet-proxy may not list pods");
    drop(children);
    std::fs::remove_dir_all(&dir).unwrap();
}
