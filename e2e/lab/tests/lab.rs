//! End to end: `svcnet-lab up` (2 nodes), pods, a ClusterIP round trip from a node, NodePort closed from
//! outside until a GCE firewall rule opens it, a LoadBalancer round trip from the client namespace through
//! the LB IP the cloud controller made, then `down`, which must leave no namespace and no lab directory.
//!
//! Needs root (network namespaces): prints SKIPPED outside CI, fails under CI=true. The other binaries
//! are built once into this test's target dir (same profile), next to `svcnet-lab`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn lab_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_svcnet-lab"))
}

fn build_siblings() {
    let profile_dir = lab_bin().parent().unwrap().to_path_buf();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q"]);
    for p in [
        "svcnet-apiserver",
        "svcnet-fake-gce",
        "svcnet-proxy",
        "svcnet-cloud-controller",
    ] {
        cmd.args(["-p", p]);
    }
    if let Some(target) = profile_dir.parent() {
        cmd.arg("--target-dir").arg(target);
    }
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let ok = cmd.current_dir(env!("CARGO_MANIFEST_DIR")).status().unwrap();
    assert!(ok.success(), "building the lab's binaries failed");
}

/// Whether network namespaces can be made here; under CI=true they must.
fn netns_or_skip() -> bool {
    let name = format!("svcnet-t-labprobe-{}", std::process::id());
    let ok = Command::new("ip")
        .args(["netns", "add", &name])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        let _ = Command::new("ip").args(["netns", "del", &name]).status();
        return true;
    }
    assert!(
        !std::env::var("CI").is_ok_and(|v| !v.is_empty()),
        "network namespaces are required in CI but unavailable"
    );
    eprintln!("SKIPPED: cannot create network namespaces (not root?)");
    false
}

fn lab(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(lab_bin())
        .arg("--dir")
        .arg(dir)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "svcnet-lab {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `svcnet-lab down` on drop (also when an assertion failed), after printing the logs on failure.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = Command::new(lab_bin())
                .arg("--dir")
                .arg(&self.0)
                .arg("diagnose")
                .status();
            for entry in std::fs::read_dir(self.0.join("logs"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                eprintln!("---- {} ----", entry.path().display());
                for l in &lines[lines.len().saturating_sub(25)..] {
                    eprintln!("{l}");
                }
            }
            let _ = Command::new(lab_bin())
                .arg("--dir")
                .arg(&self.0)
                .arg("down")
                .status();
        }
    }
}

/// One HTTP request from inside `ns` (through the lab binary); (status, body) or None on failure.
fn http_in(ns: &str, method: &str, url: &str, body: Option<&Value>) -> Option<(u16, String)> {
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(lab_bin())
        .args(["http", method, url, "--timeout", "2"])
        .args(if method == "PATCH" {
            vec!["--content-type", "application/merge-patch+json"]
        } else {
            vec![]
        })
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .env("RUST_BACKTRACE", "0")
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(body.map(Value::to_string).unwrap_or_default().as_bytes());
    }
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (code, rest) = text.split_once('\n')?;
    Some((code.parse().ok()?, rest.trim().to_owned()))
}

fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn up_cluster_ip_nodeport_firewall_lb_down() {
    if !netns_or_skip() {
        return;
    }
    build_siblings();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lab");
    let guard = Down(dir.clone());
    lab(&dir, &["up", "--nodes", "2"]);
    let st: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap();
    let prefix = st["prefix"].as_str().unwrap().to_owned();
    let vpc = format!("{prefix}-vpc");
    let client = format!("{prefix}-client");
    let node1 = format!("{prefix}-node-1");
    let api = |m: &str, p: &str, b: Option<&Value>| {
        let (code, body) = http_in(&vpc, m, &format!("http://10.128.0.1:6443{p}"), b).unwrap();
        assert!((200..300).contains(&code), "{m} {p}: {code} {body}");
        serde_json::from_str::<Value>(&body).unwrap()
    };

    lab(&dir, &["run", "hostnames", "--replicas", "2", "--port", "9376"]);
    let svc = api(
        "POST",
        "/api/v1/namespaces/default/services",
        Some(
            &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hostnames"},
            "spec": {"type": "NodePort", "selector": {"app": "hostnames"},
                     "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}}),
        ),
    );
    let cip = svc["spec"]["clusterIP"].as_str().unwrap().to_owned();
    let node_port = svc["spec"]["ports"][0]["nodePort"].as_u64().unwrap();

    // ClusterIP from node-1 reaches both pods, one of them on node-2 (via the GCE route in the VPC).
    let mut seen = std::collections::BTreeSet::new();
    wait_for("both pods behind the ClusterIP", Duration::from_secs(30), || {
        if let Some((200, name)) = http_in(&node1, "GET", &format!("http://{cip}/"), None) {
            seen.insert(name);
        }
        (seen.len() == 2).then_some(())
    });
    assert!(seen.iter().all(|n| n.starts_with("hostnames-")), "{seen:?}");

    // NodePort from outside: closed (GCE denies ingress) until a firewall rule targets the nodes' tag.
    let np_url = format!("http://10.128.0.2:{node_port}/");
    assert!(
        http_in(&client, "GET", &np_url, None).is_none(),
        "NodePort open without a firewall rule"
    );
    let fw = json!({"name": "allow-nodeport", "network": "global/networks/default",
        "allowed": [{"IPProtocol": "tcp", "ports": [node_port.to_string()]}],
        "sourceRanges": ["0.0.0.0/0"], "targetTags": ["svcnet-lab-node"]});
    let (code, body) = http_in(
        &vpc,
        "POST",
        "http://10.128.0.1:8085/compute/v1/projects/svcnet-lab/global/firewalls",
        Some(&fw),
    )
    .unwrap();
    assert!((200..300).contains(&code), "firewall insert: {code} {body}");
    wait_for("NodePort through the firewall", Duration::from_secs(20), || {
        matches!(http_in(&client, "GET", &np_url, None), Some((200, n)) if n.starts_with("hostnames-"))
            .then_some(())
    });

    // LoadBalancer: the controller's forwarding rule + target pool; the client reaches a pod by the LB IP.
    api(
        "PATCH",
        "/api/v1/namespaces/default/services/hostnames",
        Some(&json!({"spec": {"type": "LoadBalancer"}})),
    );
    let lb_ip = wait_for("ingress IP", Duration::from_secs(60), || {
        let s = api("GET", "/api/v1/namespaces/default/services/hostnames", None);
        s["status"]["loadBalancer"]["ingress"][0]["ip"]
            .as_str()
            .map(str::to_owned)
    });
    assert!(lb_ip.starts_with("203.0.113."), "{lb_ip}");
    let name = wait_for(
        "the LB IP answering from the client",
        Duration::from_secs(30),
        || match http_in(&client, "GET", &format!("http://{lb_ip}/"), None) {
            Some((200, n)) => Some(n),
            _ => None,
        },
    );
    assert!(seen.contains(&name), "{name} not one of {seen:?}");

    // externalTrafficPolicy Local with one pod (on node-1): the pool's health check moves to the
    // healthCheckNodePort, node-2 answers 503 there, so the VPC routes the LB IP to node-1 only.
    api(
        "PATCH",
        "/api/v1/namespaces/default/services/hostnames",
        Some(&json!({"spec": {"externalTrafficPolicy": "Local"}})),
    );
    lab(&dir, &["scale", "hostnames", "--replicas", "1"]);
    let lb_route = || {
        let out = Command::new("ip")
            .args(["-n", &vpc, "route", "show", &format!("{lb_ip}/32")])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    wait_for("the LB IP routed to node-1 only", Duration::from_secs(60), || {
        let r = lb_route();
        (r.contains("10.128.0.2") && !r.contains("10.128.0.3")).then_some(())
    });
    for _ in 0..3 {
        let (code, name) = http_in(&client, "GET", &format!("http://{lb_ip}/"), None).unwrap();
        assert_eq!(
            (code, name.as_str()),
            (200, "hostnames-00001"),
            "route: {}",
            lb_route()
        );
    }

    drop(guard);
    lab(&dir, &["down"]);
    let left = String::from_utf8_lossy(
        &Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .lines()
    .filter(|l| l.starts_with(&prefix))
    .map(str::to_owned)
    .collect::<Vec<_>>();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
    assert!(!dir.exists(), "lab dir left behind");
}
