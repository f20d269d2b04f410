//! CI checks of `manifests/` (issue 7) that need no API server: every overlay renders with the real
//! kubectl and passes offline Kubernetes schema validation (PyPI `kubernetes-validate`, strict); RBAC
//! matches a table of the API calls each binary makes; every flag the manifests pass exists in the
//! binaries' `--help`. Applying the overlays to the real kube-apiserver is `manifests_apply.rs`.
//!
//! Tools missing: `SKIPPED: ...` is printed (never a pass) unless `CI=true`, where it fails.
#![allow(clippy::unwrap_used)]

mod manifests_support;

use std::collections::BTreeSet;
use std::process::Command;

use manifests_support::{bins, docs, have_kubectl, kubectl_kustomize, manifests_dir, validator};
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
    let kust: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap()).unwrap();
    let listed: BTreeSet<String> = kust["resources"]
        .as_array()
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
    ("networking.k8s.io", "servicecidrs", "list", "cluster"),
    ("networking.k8s.io", "servicecidrs", "watch", "cluster"),
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
    ("", "namespaces", "get", "cluster"),
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
