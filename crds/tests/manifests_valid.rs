//! CI checks of `manifests/` (issue 7): every overlay renders with the real kubectl, passes offline
//! Kubernetes schema validation (PyPI `kubernetes-validate`, strict), and the `lab` overlay applies to
//! the svcnet-apiserver stand-in with the real kubectl (client-side and server-side; the stand-in serves
//! apps/v1 and rbac.authorization.k8s.io/v1 itself) and every object reads back as rendered. Also: RBAC
//! matches a table of the API calls each binary makes, and every flag the manifests pass exists in the
//! binaries' `--help`.
//!
//! Tools missing: `SKIPPED: ...` is printed (never a pass) unless `CI=true`, where it fails.
#![allow(clippy::unwrap_used)]

mod manifests_support;

use std::collections::BTreeSet;
use std::process::Command;

use manifests_support::subset::first_difference;
use manifests_support::{
    ApiServer, Need, bins, docs, have_kubectl, kubectl_kustomize, manifests_dir, need, validator,
};
use serde_json::Value;

/// The overlays CI renders: every directory under manifests/overlays.
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

#[test]
fn every_overlay_renders_and_passes_strict_schema_validation() {
    if !have_kubectl("overlay validation") {
        return;
    }
    let Some(validate) = validator() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for overlay in overlays() {
        let text = kubectl_kustomize(&format!("overlays/{overlay}"));
        let kinds: BTreeSet<String> = docs(&text)
            .iter()
            .filter_map(|d| d["kind"].as_str().map(String::from))
            .collect();
        for want in [
            "CustomResourceDefinition",
            "DaemonSet",
            "Deployment",
            "ClusterRole",
        ] {
            assert!(kinds.contains(want), "{overlay}: no {want} in {kinds:?}");
        }
        let file = tmp.path().join(format!("{overlay}.yaml"));
        std::fs::write(&file, &text).unwrap();
        let out = Command::new(&validate)
            .args(["--strict", "--quiet", "-k", "1.32"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{overlay} failed schema validation:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        println!(
            "{overlay}: {} objects valid against Kubernetes 1.32 schemas",
            docs(&text).len()
        );
    }
    // The validator must be able to say no: a DaemonSet with a mistyped field fails.
    let bad = tmp.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      hostNetwork: \"yes\"\n      containers: [{name: c, image: i}]\n",
    )
    .unwrap();
    let out = Command::new(&validate)
        .args(["--strict", "--quiet", "-k", "1.32"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the validator accepted a broken DaemonSet");
}

#[test]
fn crds_kustomization_lists_every_generated_crd() {
    let dir = manifests_dir().join("crds");
    let kust: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap()).unwrap();
    let listed: BTreeSet<String> = kust["resources"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    let generated: BTreeSet<String> = svcnet_crds::manifests::generated_files()
        .unwrap()
        .into_iter()
        .map(|f| f.file_name)
        .collect();
    assert_eq!(
        listed, generated,
        "manifests/crds/kustomization.yaml must list exactly the generated CRDs"
    );
}

/// (apiGroup, resource, verb, scope) each binary needs. Derived by READING the code (the comments in
/// manifests/base/*/rbac.yaml name the call sites), not from an API audit log. Scope "cluster" =
/// ClusterRole, otherwise the namespace of the Role.
const PROXY_NEEDS: &[(&str, &str, &str, &str)] = &[
    ("", "services", "list", "cluster"),
    ("", "services", "watch", "cluster"),
    ("discovery.k8s.io", "endpointslices", "list", "cluster"),
    ("discovery.k8s.io", "endpointslices", "watch", "cluster"),
    ("", "nodes", "list", "cluster"),
    ("", "nodes", "watch", "cluster"),
];

const CONTROLLER_NEEDS: &[(&str, &str, &str, &str)] = &[
    ("", "services", "list", "cluster"),
    ("", "services", "watch", "cluster"),
    ("", "services", "patch", "cluster"),
    ("", "services/status", "patch", "cluster"),
    ("", "nodes", "list", "cluster"),
    ("", "nodes", "watch", "cluster"),
    ("", "nodes", "patch", "cluster"),
    ("", "nodes", "delete", "cluster"),
    ("", "nodes/status", "patch", "cluster"),
    ("events.k8s.io", "events", "create", "cluster"),
    ("events.k8s.io", "events", "patch", "cluster"),
    ("svcnet.dev", "cloudloadbalancers", "get", "cluster"),
    ("svcnet.dev", "cloudloadbalancers", "create", "cluster"),
    ("svcnet.dev", "cloudloadbalancers", "patch", "cluster"),
    ("svcnet.dev", "cloudloadbalancers", "delete", "cluster"),
    ("svcnet.dev", "cloudloadbalancers/status", "patch", "cluster"),
    ("coordination.k8s.io", "leases", "get", "kube-system"),
    ("coordination.k8s.io", "leases", "create", "kube-system"),
    ("coordination.k8s.io", "leases", "patch", "kube-system"),
    ("", "configmaps", "get", "kube-system"),
    ("", "configmaps", "create", "kube-system"),
];

type Grant = (String, String, String, String);

/// Every (group, resource, verb, scope) the RBAC objects bound to `sa` grant. Parses the base YAML
/// files directly (no kubectl needed), resolving bindings to their roles.
fn grants_for(sa: &str, files: &[&str]) -> BTreeSet<Grant> {
    let mut objects = Vec::new();
    for f in files {
        objects.extend(docs(&std::fs::read_to_string(manifests_dir().join(f)).unwrap()));
    }
    let mut out = BTreeSet::new();
    for b in objects
        .iter()
        .filter(|o| o["kind"] == "ClusterRoleBinding" || o["kind"] == "RoleBinding")
    {
        let bound = b["subjects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["kind"] == "ServiceAccount" && s["name"] == sa);
        if !bound {
            continue;
        }
        let role = objects
            .iter()
            .find(|o| o["kind"] == b["roleRef"]["kind"] && o["metadata"]["name"] == b["roleRef"]["name"])
            .unwrap_or_else(|| panic!("{} refers to a missing role", b["metadata"]["name"]));
        // The kustomization puts every namespaced object into kube-system.
        let scope = if b["kind"] == "RoleBinding" {
            "kube-system"
        } else {
            "cluster"
        };
        for rule in role["rules"].as_array().unwrap() {
            let strs = |k: &str| -> Vec<String> {
                rule[k]
                    .as_array()
                    .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
                    .unwrap_or_default()
            };
            for g in strs("apiGroups") {
                for r in strs("resources") {
                    for v in strs("verbs") {
                        assert!(
                            g != "*" && r != "*" && v != "*",
                            "wildcard in {}",
                            role["metadata"]["name"]
                        );
                        out.insert((g.clone(), r.clone(), v, scope.to_string()));
                    }
                }
            }
        }
    }
    out
}

fn check_exact(sa: &str, files: &[&str], needs: &[(&str, &str, &str, &str)]) {
    let granted = grants_for(sa, files);
    let needed: BTreeSet<Grant> = needs
        .iter()
        .map(|(g, r, v, s)| (g.to_string(), r.to_string(), v.to_string(), s.to_string()))
        .collect();
    let missing: Vec<_> = needed.difference(&granted).collect();
    let extra: Vec<_> = granted.difference(&needed).collect();
    assert!(
        missing.is_empty(),
        "{sa}: RBAC misses calls the code makes: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "{sa}: RBAC grants more than the code uses (least privilege): {extra:?}"
    );
}

#[test]
fn rbac_grants_exactly_the_calls_each_binary_makes() {
    check_exact("svcnet-proxy", &["base/proxy/rbac.yaml"], PROXY_NEEDS);
    check_exact(
        "svcnet-cloud-controller",
        &["base/cloud-controller/rbac.yaml"],
        CONTROLLER_NEEDS,
    );
}

#[test]
fn rbac_check_notices_a_missing_verb() {
    // The cross-check must be able to fail: drop one needed verb from the table's view of the role.
    let granted = grants_for("svcnet-proxy", &["base/proxy/rbac.yaml"]);
    let mut fewer = granted.clone();
    fewer.remove(&(String::new(), "nodes".into(), "watch".into(), "cluster".into()));
    assert_ne!(granted, fewer, "the proxy role should grant nodes watch");
}

/// `--flag` names each container passes, by binary.
fn container_flags(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for d in docs(text) {
        let Some(containers) = d
            .pointer("/spec/template/spec/containers")
            .and_then(Value::as_array)
        else {
            continue;
        };
        for c in containers {
            let cmd: Vec<String> = c["command"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect();
            let bin = cmd[0].rsplit('/').next().unwrap().to_string();
            let flags = cmd[1..]
                .iter()
                .filter_map(|a| {
                    a.strip_prefix("--")
                        .map(|f| f.split('=').next().unwrap().to_string())
                })
                .collect();
            out.push((bin, flags));
        }
    }
    out
}

#[test]
fn every_flag_in_the_manifests_exists_in_the_binaries() {
    if !have_kubectl("flag check") {
        return;
    }
    let b = bins();
    for overlay in overlays() {
        let text = kubectl_kustomize(&format!("overlays/{overlay}"));
        let found = container_flags(&text);
        assert_eq!(
            found.len(),
            2,
            "{overlay}: expected the proxy and the controller containers"
        );
        for (bin, flags) in found {
            let (path, sub): (_, &[&str]) = match bin.as_str() {
                "svcnet-proxy" => (&b.proxy, &["run", "--help"]),
                "svcnet-cloud-controller" => (&b.controller, &["--help"]),
                other => panic!("unknown binary {other}"),
            };
            let help = Command::new(path).args(sub).output().unwrap();
            let help = String::from_utf8_lossy(&help.stdout);
            for f in flags {
                assert!(
                    help.contains(&format!("--{f}")),
                    "{overlay}: {bin} has no --{f} (see its --help)"
                );
            }
        }
    }
}

#[test]
fn rendered_workloads_have_what_the_node_agent_and_controller_need() {
    if !have_kubectl("workload check") {
        return;
    }
    for overlay in overlays() {
        let objs = docs(&kubectl_kustomize(&format!("overlays/{overlay}")));
        let ds = objs.iter().find(|o| o["kind"] == "DaemonSet").unwrap();
        let spec = &ds["spec"]["template"]["spec"];
        assert_eq!(spec["hostNetwork"], true, "{overlay}");
        assert_eq!(spec["priorityClassName"], "system-node-critical", "{overlay}");
        assert!(
            spec["tolerations"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["operator"] == "Exists" && t.get("key").is_none())
        );
        let c = &spec["containers"][0];
        assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/livez");
        assert_eq!(c["livenessProbe"]["httpGet"]["port"], 10256);
        let mounts: Vec<&str> = c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["mountPath"].as_str())
            .collect();
        assert!(
            mounts.contains(&"/run/xtables.lock") && mounts.contains(&"/lib/modules"),
            "{mounts:?}"
        );
        let node_env = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "NODE_NAME")
            .unwrap();
        assert_eq!(node_env["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");
        let dep = objs.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(dep["spec"]["replicas"], 2, "{overlay}");
        let cmd = dep["spec"]["template"]["spec"]["containers"][0]["command"]
            .as_array()
            .unwrap();
        assert!(cmd.iter().any(|a| a == "--leader-elect=true"), "{overlay}");
        // Every ConfigMap a workload mounts is part of the rendered output (generator hash names).
        for w in [ds, dep] {
            for v in w["spec"]["template"]["spec"]["volumes"].as_array().unwrap() {
                if let Some(name) = v["configMap"]["name"].as_str() {
                    assert!(
                        objs.iter()
                            .any(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == name),
                        "{overlay}: {name}"
                    );
                }
            }
        }
    }
}

/// Kinds the real apiserver serves cluster-wide; everything else in the overlay is namespaced and the
/// kustomization puts it into kube-system.
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

/// `kubectl get` of every rendered object from `server`: each exists with the scope its kind has
/// upstream, and everything the manifest says (all but status) is in what the server returns.
fn check_served(server: &ApiServer, rendered: &[Value]) {
    for obj in rendered {
        let name = obj["metadata"]["name"].as_str().unwrap();
        let ty = kubectl_type(obj);
        let cluster = CLUSTER_SCOPED.contains(&obj["kind"].as_str().unwrap());
        let mut args = vec!["get", ty.as_str(), name, "-o", "json"];
        if !cluster {
            args.extend(["-n", "kube-system"]);
        }
        let out = server.kubectl(&args);
        need(&out, Need::Success, &format!("kubectl get {ty} {name}"));
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            got["metadata"]["uid"].as_str().is_some_and(|u| !u.is_empty()),
            "{ty}/{name}: {got}"
        );
        assert_eq!(
            got["metadata"].get("namespace").and_then(Value::as_str),
            (!cluster).then_some("kube-system"),
            "{ty}/{name}: scope"
        );
        let mut want = obj.clone();
        want.as_object_mut().unwrap().remove("status");
        if let Some(diff) = first_difference(&want, &got, &ty) {
            panic!("{ty}/{name} as served differs from the manifest: {diff}");
        }
    }
}

#[test]
fn lab_overlay_applies_to_svcnet_apiserver_with_real_kubectl() {
    if !have_kubectl("kubectl apply against svcnet-apiserver") {
        return;
    }
    let rendered = docs(&kubectl_kustomize("overlays/lab"));
    let server = ApiServer::start(&bins().apiserver);
    let lab = manifests_dir().join("overlays/lab");
    let lab = lab.to_str().unwrap();
    let out = server.kubectl(&["apply", "-k", lab]);
    need(&out, Need::Success, "kubectl apply -k manifests/overlays/lab");
    // Applying again computes strategic merge patches against what the server returned: if it kept
    // every field, each patch is empty and kubectl reports every object unchanged.
    let out = server.kubectl(&["apply", "-k", lab]);
    need(
        &out,
        Need::Success,
        "second kubectl apply -k manifests/overlays/lab",
    );
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), rendered.len(), "{lines:?}");
    for l in &lines {
        assert!(l.ends_with(" unchanged"), "second apply changed something: {l}");
    }
    check_served(&server, &rendered);
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
    // Short names and cluster-wide listings, as an operator would type them.
    let out = server.kubectl(&[
        "get",
        "ds,deploy,sa,cm,role,rolebinding",
        "-n",
        "kube-system",
        "-o",
        "name",
    ]);
    need(
        &out,
        Need::Success,
        "kubectl get ds,deploy,sa,cm,role,rolebinding -n kube-system",
    );
    let listed = String::from_utf8_lossy(&out.stdout).lines().count();
    let namespaced = rendered
        .iter()
        .filter(|o| !CLUSTER_SCOPED.contains(&o["kind"].as_str().unwrap()))
        .count();
    assert_eq!(listed, namespaced, "{}", String::from_utf8_lossy(&out.stdout));
    let out = server.kubectl(&["get", "clusterroles", "-o", "name"]);
    need(&out, Need::Success, "kubectl get clusterroles");
    let roles = String::from_utf8_lossy(&out.stdout);
    for o in rendered.iter().filter(|o| o["kind"] == "ClusterRole") {
        let name = o["metadata"]["name"].as_str().unwrap();
        assert!(
            roles
                .lines()
                .any(|l| l == format!("clusterrole.rbac.authorization.k8s.io/{name}")),
            "{name} not in {roles}"
        );
    }
    // The CRD applied from the manifests is served: the printer-column listing works.
    let out = server.kubectl(&["get", "cloudloadbalancers", "-A"]);
    need(&out, Need::Success, "kubectl get cloudloadbalancers -A");
}

#[test]
fn lab_overlay_applies_server_side_to_svcnet_apiserver() {
    if !have_kubectl("kubectl apply --server-side against svcnet-apiserver") {
        return;
    }
    let rendered = docs(&kubectl_kustomize("overlays/lab"));
    let server = ApiServer::start(&bins().apiserver);
    let lab = manifests_dir().join("overlays/lab");
    let lab = lab.to_str().unwrap();
    for round in ["first", "second"] {
        let out = server.kubectl(&["apply", "--server-side", "-k", lab]);
        need(
            &out,
            Need::Success,
            &format!("{round} kubectl apply --server-side -k lab"),
        );
    }
    check_served(&server, &rendered);
    let out = server.kubectl(&["delete", "-k", lab]);
    need(&out, Need::Success, "kubectl delete -k lab");
    let out = server.kubectl(&["get", "ds,deploy", "-n", "kube-system", "-o", "name"]);
    need(&out, Need::Success, "kubectl get after delete");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "",
        "left after delete -k"
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

/// The controller starts with the `lab` overlay's rendered command line and gce.conf: only what the lab
/// network would provide is swapped for loopback (kubeconfig of a svcnet-apiserver, metrics address, a
/// closed GCE endpoint), and `$(POD_NAME)` is expanded as the kubelet would. It must take the Lease named
/// in the RBAC Role, create the cluster-ID ConfigMap, answer /healthz, and use the project from gce.conf.
/// No GCE call succeeds here (nothing listens on the endpoint); the proxy is not started (it must never
/// run in the machine's root network namespace).
#[test]
fn controller_starts_with_the_lab_overlays_flags_and_config() {
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
    let server = ApiServer::start(&bins().apiserver);
    let gce_conf = server.dir.path().join("gce.conf");
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
                Some(("--kubeconfig", _)) => format!("--kubeconfig={}", server.kubeconfig().display()),
                Some(("--config", _)) => format!("--config={}", gce_conf.display()),
                Some(("--metrics-addr", _)) => format!("--metrics-addr={metrics}"),
                Some(("--gce-endpoint", _)) => format!("--gce-endpoint=http://127.0.0.1:{}", free_port()),
                _ => a,
            }
        })
        .collect();
    let log = server.dir.path().join("controller.log");
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
