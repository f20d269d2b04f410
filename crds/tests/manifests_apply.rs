//! Every overlay of `manifests/` applied with the real kubectl to the real kube-apiserver (v1.34, built by
//! testing/k8s; RBAC on): client-side apply twice (the second changes nothing), server-side apply twice,
//! strict server-side field validation, the CRD established, every object served as rendered, `delete -k`
//! leaving nothing; the CloudLoadBalancer printer columns as the real kubectl prints them; and the
//! controller started with the lab overlay's command line under its own ServiceAccount and RBAC.
//!
//! kubectl missing: `SKIPPED: ...` (never a pass) unless `CI=true`, where it fails.
#![allow(clippy::unwrap_used)]

mod manifests_support;

use std::process::Command;

use manifests_support::subset::first_difference;
use manifests_support::{ApiServer, Need, bins, docs, have_kubectl, kubectl_kustomize, manifests_dir, need};
use serde_json::Value;
use svcnet_testcluster::Component;

/// The label the base kustomization puts on every svcnet object (kube-system holds the control plane's
/// own objects too).
const PART_OF: &str = "app.kubernetes.io/part-of=svcnet";

/// The overlays: every directory under manifests/overlays.
fn overlays() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(manifests_dir().join("overlays"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("kustomization.yaml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    assert!(
        out.iter().any(|o| o == "gce") && out.iter().any(|o| o == "lab"),
        "{out:?}"
    );
    out
}

/// Kinds served cluster-wide; everything else in an overlay is namespaced and the kustomization puts it
/// into kube-system.
const CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
];

/// `kind.group` as kubectl accepts it (`daemonset.apps`, `configmap`).
fn kubectl_type(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap().to_ascii_lowercase();
    match obj["apiVersion"].as_str().unwrap().rsplit_once('/') {
        Some((group, _)) => format!("{kind}.{group}"),
        None => kind,
    }
}

/// `kubectl get` of every rendered object: each exists with its kind's scope, and everything the
/// manifest says (all but status) is in what the server returns.
fn check_served(server: &ApiServer, overlay: &str, rendered: &[Value]) {
    for obj in rendered {
        let name = obj["metadata"]["name"].as_str().unwrap();
        let ty = kubectl_type(obj);
        let cluster = CLUSTER_SCOPED.contains(&obj["kind"].as_str().unwrap());
        let mut args = vec!["get", ty.as_str(), name, "-o", "json"];
        if !cluster {
            args.extend(["-n", "kube-system"]);
        }
        let out = server.kubectl(&args);
        need(
            &out,
            Need::Success,
            &format!("{overlay}: kubectl get {ty} {name}"),
        );
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            got["metadata"]["uid"].as_str().is_some_and(|u| !u.is_empty()),
            "{ty}/{name}: {got}"
        );
        assert_eq!(
            got["metadata"].get("namespace").and_then(Value::as_str),
            (!cluster).then_some("kube-system"),
            "{overlay}: {ty}/{name}: scope"
        );
        let mut want = obj.clone();
        want.as_object_mut().unwrap().remove("status");
        if let Some(diff) = first_difference(&want, &got, &ty) {
            panic!("{overlay}: {ty}/{name} as served differs from the manifest: {diff}");
        }
    }
}

/// What the overlay made in kube-system, as `kind/name` lines (our label only).
fn ours(server: &ApiServer) -> Vec<String> {
    let out = server.kubectl(&[
        "get",
        "ds,deploy,sa,cm,role,rolebinding",
        "-n",
        "kube-system",
        "-l",
        PART_OF,
        "-o",
        "name",
    ]);
    need(
        &out,
        Need::Success,
        "kubectl get ds,deploy,sa,cm,role,rolebinding -l part-of=svcnet",
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}

fn crd_established(server: &ApiServer, overlay: &str) {
    let out = server.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/cloudloadbalancers.svcnet.dev",
        "--timeout=60s",
    ]);
    need(
        &out,
        Need::Success,
        &format!("{overlay}: CloudLoadBalancer CRD established"),
    );
}

fn delete_leaves_nothing(server: &ApiServer, overlay: &str, dir: &str) {
    let out = server.kubectl(&["delete", "-k", dir, "--wait=true"]);
    need(&out, Need::Success, &format!("{overlay}: kubectl delete -k"));
    assert_eq!(
        ours(server),
        Vec::<String>::new(),
        "{overlay}: left after delete -k"
    );
    let out = server.kubectl(&["get", "crd", "cloudloadbalancers.svcnet.dev"]);
    assert!(!out.status.success(), "{overlay}: the CRD survived delete -k");
}

#[test]
fn every_overlay_applies_client_side_to_the_real_api_server() {
    if !have_kubectl("kubectl apply against kube-apiserver") {
        return;
    }
    let server = ApiServer::start();
    for overlay in overlays() {
        let rendered = docs(&kubectl_kustomize(&format!("overlays/{overlay}")));
        let dir = manifests_dir().join("overlays").join(&overlay);
        let dir = dir.to_str().unwrap();
        let out = server.kubectl(&["apply", "--validate=strict", "-k", dir]);
        need(
            &out,
            Need::Success,
            &format!("kubectl apply -k overlays/{overlay}"),
        );
        crd_established(&server, &overlay);
        // The second apply computes strategic merge patches against what the server returned: every
        // patch is empty when the server kept every field.
        let out = server.kubectl(&["apply", "--validate=strict", "-k", dir]);
        need(
            &out,
            Need::Success,
            &format!("second kubectl apply -k overlays/{overlay}"),
        );
        let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(lines.len(), rendered.len(), "{overlay}: {lines:?}");
        for l in &lines {
            assert!(
                l.ends_with(" unchanged"),
                "{overlay}: second apply changed something: {l}"
            );
        }
        check_served(&server, &overlay, &rendered);
        // One field named explicitly: the proxy's command line is what the DaemonSet manifest says.
        let ds = rendered.iter().find(|o| o["kind"] == "DaemonSet").unwrap();
        let out = server.kubectl(&[
            "-n",
            "kube-system",
            "get",
            "ds",
            ds["metadata"]["name"].as_str().unwrap(),
            "-o",
            "jsonpath={.spec.template.spec.containers[0].command}",
        ]);
        need(&out, Need::Success, "daemonset command");
        let served: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(served, ds["spec"]["template"]["spec"]["containers"][0]["command"]);
        // Short names, as an operator types them: exactly the overlay's namespaced objects.
        let namespaced = rendered
            .iter()
            .filter(|o| !CLUSTER_SCOPED.contains(&o["kind"].as_str().unwrap()))
            .count();
        assert_eq!(ours(&server).len(), namespaced, "{overlay}: {:?}", ours(&server));
        let out = server.kubectl(&["get", "clusterroles", "-l", PART_OF, "-o", "name"]);
        need(&out, Need::Success, "kubectl get clusterroles");
        let roles = String::from_utf8_lossy(&out.stdout);
        for o in rendered.iter().filter(|o| o["kind"] == "ClusterRole") {
            let name = o["metadata"]["name"].as_str().unwrap();
            assert!(
                roles
                    .lines()
                    .any(|l| l == format!("clusterrole.rbac.authorization.k8s.io/{name}")),
                "{overlay}: {name} not in {roles}"
            );
        }
        delete_leaves_nothing(&server, &overlay, dir);
    }
}

#[test]
fn every_overlay_applies_server_side_to_the_real_api_server() {
    if !have_kubectl("kubectl apply --server-side against kube-apiserver") {
        return;
    }
    let server = ApiServer::start();
    for overlay in overlays() {
        let rendered = docs(&kubectl_kustomize(&format!("overlays/{overlay}")));
        let dir = manifests_dir().join("overlays").join(&overlay);
        let dir = dir.to_str().unwrap();
        for round in ["first", "second"] {
            let out = server.kubectl(&["apply", "--server-side", "--validate=strict", "-k", dir]);
            need(
                &out,
                Need::Success,
                &format!("{round} kubectl apply --server-side -k overlays/{overlay}"),
            );
        }
        crd_established(&server, &overlay);
        check_served(&server, &overlay, &rendered);
        delete_leaves_nothing(&server, &overlay, dir);
    }
}

/// The real server rejects what strict validation must reject: the apply checks above can fail.
#[test]
fn the_real_server_rejects_an_unknown_field() {
    if !have_kubectl("strict validation against kube-apiserver") {
        return;
    }
    let server = ApiServer::start();
    let bad = server.dir().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x, namespace: kube-system}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      hostNetwerk: true\n      containers: [{name: c, image: i}]\n",
    )
    .unwrap();
    let out = server.kubectl(&[
        "apply",
        "--server-side",
        "--validate=strict",
        "-f",
        bad.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "a DaemonSet with hostNetwerk was accepted");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("hostNetwerk"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The CRD's printer columns as the real kubectl prints them from the real server's Table response.
#[test]
fn cloudloadbalancer_printer_columns_through_the_real_kubectl() {
    if !have_kubectl("kubectl get cloudloadbalancers against kube-apiserver") {
        return;
    }
    let server = ApiServer::start();
    let crds = manifests_dir().join("crds");
    let out = server.kubectl(&["apply", "--server-side", "-k", crds.to_str().unwrap()]);
    need(&out, Need::Success, "kubectl apply -k manifests/crds");
    crd_established(&server, "crds");
    let clb = server.dir().join("clb.yaml");
    std::fs::write(
        &clb,
        "apiVersion: svcnet.dev/v1alpha1\nkind: CloudLoadBalancer\nmetadata: {name: hostnames, namespace: default}\nspec: {serviceName: hostnames, serviceUID: 5b4c2a5e-0000-4000-8000-000000000001}\n",
    )
    .unwrap();
    let out = server.kubectl(&["apply", "--server-side", "-f", clb.to_str().unwrap()]);
    need(&out, Need::Success, "create the CloudLoadBalancer");
    let status = r#"{"status":{"ingressIP":"104.199.232.159","portsSummary":"80/TCP","nodeCount":3,
        "conditions":[{"type":"Ready","status":"True","reason":"Ensured","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}],
        "gce":{"forwardingRule":{"name":"a5b4c2a5e00004000800000000000001"}},"lastError":"quota exceeded"}}"#;
    let out = server.kubectl(&[
        "patch",
        "cloudloadbalancer",
        "hostnames",
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ]);
    need(&out, Need::Success, "patch the CloudLoadBalancer's status");

    let table = |extra: &[&str]| -> Vec<Vec<String>> {
        let mut args = vec!["get", "cloudloadbalancers", "-n", "default"];
        args.extend_from_slice(extra);
        let out = server.kubectl(&args);
        need(&out, Need::Success, "kubectl get cloudloadbalancers");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect()
    };
    let t = table(&[]);
    assert_eq!(t[0], ["NAME", "IP", "PORTS", "NODES", "READY", "AGE"], "{t:?}");
    assert_eq!(
        t[1][..5],
        ["hostnames", "104.199.232.159", "80/TCP", "3", "True"],
        "{t:?}"
    );
    let wide = table(&["-o", "wide"]);
    assert_eq!(
        wide[0],
        [
            "NAME",
            "IP",
            "PORTS",
            "NODES",
            "READY",
            "AGE",
            "FORWARDING-RULE",
            "ERROR"
        ],
        "{wide:?}"
    );
    assert_eq!(wide[1][6], "a5b4c2a5e00004000800000000000001", "{wide:?}");
    assert_eq!(wide[1][7..], ["quota", "exceeded"], "{wide:?}");
    // The category and short listing an operator uses.
    let out = server.kubectl(&["get", "svcnet", "-A", "-o", "name"]);
    need(&out, Need::Success, "kubectl get svcnet -A");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "cloudloadbalancer.svcnet.dev/hostnames"
    );
}

#[test]
fn containment_check_notices_a_changed_field() {
    // check_served must be able to fail: a served DaemonSet whose command differs, or which lost a list
    // item, is not accepted.
    let want = serde_json::json!({"kind": "DaemonSet", "spec": {"template": {"spec": {"containers": [
        {"name": "p", "command": ["svcnet-proxy", "run"]}]}}}});
    let mut got = want.clone();
    got["metadata"] = serde_json::json!({"uid": "u"});
    assert_eq!(first_difference(&want, &got, "ds"), None);
    got["spec"]["template"]["spec"]["containers"][0]["command"][1] = serde_json::json!("render");
    assert!(first_difference(&want, &got, "ds").is_some());
    got["spec"]["template"]["spec"]["containers"] = serde_json::json!([]);
    assert!(first_difference(&want, &got, "ds").is_some());
}

/// A free loopback port (bound, read back, released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The controller starts with the `lab` overlay's rendered command line and gce.conf, authenticated as
/// its ServiceAccount with the overlay's RBAC (a missing verb fails here): only what the lab network
/// would provide is swapped for loopback (kubeconfig, metrics address, a closed GCE endpoint), and
/// `$(POD_NAME)` is expanded as the kubelet would. It must take the Lease its Role names, create the
/// cluster-ID ConfigMap, answer /healthz, and use the project from gce.conf. No GCE call succeeds here;
/// the proxy is not started (it must never run in the machine's root network namespace).
#[test]
fn controller_starts_with_the_lab_overlays_flags_config_and_rbac() {
    if !have_kubectl("controller start-up with the lab flags") {
        return;
    }
    let objs = docs(&kubectl_kustomize("overlays/lab"));
    let dep = objs.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let cm_name = dep["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"]
        .as_str()
        .unwrap();
    let cm = objs
        .iter()
        .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == cm_name)
        .unwrap();
    let server = ApiServer::start();
    let lab = manifests_dir().join("overlays/lab");
    let out = server.kubectl(&["apply", "--server-side", "-k", lab.to_str().unwrap()]);
    need(&out, Need::Success, "kubectl apply --server-side -k overlays/lab");
    let kubeconfig = server
        .cluster
        .component_kubeconfig(Component::CloudController)
        .unwrap();
    let gce_conf = server.dir().join("gce.conf");
    std::fs::write(&gce_conf, cm["data"]["gce.conf"].as_str().unwrap()).unwrap();
    let metrics = format!("127.0.0.1:{}", free_port());
    let identity = "manifests-test-pod";
    let args: Vec<String> = dep["spec"]["template"]["spec"]["containers"][0]["command"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|a| {
            let a = a.as_str().unwrap().replace("$(POD_NAME)", identity);
            match a.split_once('=') {
                Some(("--kubeconfig", _)) => format!("--kubeconfig={}", kubeconfig.display()),
                Some(("--config", _)) => format!("--config={}", gce_conf.display()),
                Some(("--metrics-addr", _)) => format!("--metrics-addr={metrics}"),
                Some(("--gce-endpoint", _)) => format!("--gce-endpoint=http://127.0.0.1:{}", free_port()),
                _ => a,
            }
        })
        .collect();
    let log = server.dir().join("controller.log");
    let mut child = Command::new(&bins().controller)
        .args(&args)
        .env("SVCNET_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut seen = (false, false, false);
    while std::time::Instant::now() < deadline && seen != (true, true, true) {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let lease = server.kubectl(&[
            "-n",
            "kube-system",
            "get",
            "lease",
            "svcnet-cloud-controller",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ]);
        seen.0 = String::from_utf8_lossy(&lease.stdout) == identity;
        seen.1 = server
            .kubectl(&["-n", "kube-system", "get", "configmap", "ingress-uid"])
            .status
            .success();
        seen.2 = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("projects/svcnet-lab/");
    }
    let healthz = std::net::TcpStream::connect(&metrics).ok().and_then(|mut s| {
        use std::io::{Read, Write};
        s.write_all(b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n").ok()?;
        let mut body = String::new();
        s.read_to_string(&mut body).ok()?;
        Some(body)
    });
    let _ = child.kill();
    let _ = child.wait();
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    let tail: String = log_text.lines().rev().take(20).collect::<Vec<_>>().join("\n");
    assert!(
        seen.0,
        "the controller did not take the Lease as {identity}; log tail:\n{tail}"
    );
    assert!(seen.1, "no kube-system/ingress-uid ConfigMap; log tail:\n{tail}");
    assert!(
        seen.2,
        "the controller did not use project svcnet-lab from gce.conf; log tail:\n{tail}"
    );
    let healthz = healthz.unwrap_or_default();
    assert!(
        healthz.starts_with("HTTP/1.") && healthz.contains(" 200 "),
        "/healthz: {healthz:?}"
    );
}
