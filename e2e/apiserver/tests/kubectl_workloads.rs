//! The real kubectl against the stand-in's apps/v1 and rbac.authorization.k8s.io/v1 kinds: discovery
//! (scope, short names, category `all`), client-side and server-side apply, get back, status
//! subresource, generation, delete, and namespaced objects refused in a missing namespace.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod common;

use common::{Server, kubectl_available};

fn workloads(args: &str, subject: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Namespace
metadata: {{name: shop}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: web, namespace: shop}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: shop, labels: {{app: web}}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      serviceAccountName: web
      containers: [{{name: web, image: "nginx:1", args: [{args}]}}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: shop}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      hostNetwork: true
      tolerations: [{{operator: Exists}}]
      containers: [{{name: agent, image: "agent:1", args: [{args}]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: shop-reader}}
rules:
- {{apiGroups: [""], resources: [services], verbs: [get, list, watch]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: shop-reader}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: shop-reader}}
subjects: [{{kind: ServiceAccount, name: {subject}, namespace: shop}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: leases, namespace: shop}}
rules:
- {{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, update]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: leases, namespace: shop}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: leases}}
subjects: [{{kind: ServiceAccount, name: {subject}, namespace: shop}}]
"#
    )
}

const OBJECTS: [&str; 8] = [
    "namespace/shop",
    "serviceaccount/web",
    "deployment.apps/web",
    "daemonset.apps/agent",
    "clusterrole.rbac.authorization.k8s.io/shop-reader",
    "clusterrolebinding.rbac.authorization.k8s.io/shop-reader",
    "role.rbac.authorization.k8s.io/leases",
    "rolebinding.rbac.authorization.k8s.io/leases",
];

fn lines(out: &str) -> Vec<&str> {
    out.lines().filter(|l| !l.is_empty()).collect()
}

#[test]
fn discovery_serves_apps_and_rbac_with_upstream_scope_and_short_names() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    let out = s.kubectl_ok(&["api-resources", "--no-headers"]);
    // (resource, short names, apiVersion, namespaced, kind) as `kubectl api-resources` prints them
    // against a real apiserver.
    for want in [
        "deployments deploy apps/v1 true Deployment",
        "daemonsets ds apps/v1 true DaemonSet",
        "statefulsets sts apps/v1 true StatefulSet",
        "replicasets rs apps/v1 true ReplicaSet",
        "clusterroles rbac.authorization.k8s.io/v1 false ClusterRole",
        "clusterrolebindings rbac.authorization.k8s.io/v1 false ClusterRoleBinding",
        "roles rbac.authorization.k8s.io/v1 true Role",
        "rolebindings rbac.authorization.k8s.io/v1 true RoleBinding",
        "serviceaccounts sa v1 true ServiceAccount",
        "configmaps cm v1 true ConfigMap",
        "secrets v1 true Secret",
        "namespaces ns v1 false Namespace",
    ] {
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") == want),
            "no `{want}` in\n{out}"
        );
    }
    let apps = s.kubectl_ok(&[
        "api-resources",
        "--api-group=apps",
        "--categories=all",
        "-o",
        "name",
    ]);
    assert_eq!(
        lines(&apps),
        [
            "daemonsets.apps",
            "deployments.apps",
            "replicasets.apps",
            "statefulsets.apps"
        ]
    );
}

#[test]
fn apply_workloads_and_rbac_get_back_reapply_and_delete() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    let f = s.write("w.yaml", &workloads("--v=1", "web"));
    let out = s.kubectl_ok(&["apply", "-f", f.to_str().unwrap()]);
    for o in OBJECTS {
        assert!(out.contains(&format!("{o} created")), "{o}: {out}");
    }
    // Short names, the `all` category, field selectors on the new kinds.
    let ds = s.kubectl_ok(&["get", "ds", "-n", "shop", "-o", "name"]);
    assert_eq!(lines(&ds), ["daemonset.apps/agent"]);
    let all = s.kubectl_ok(&["get", "all", "-n", "shop", "-o", "name"]);
    assert_eq!(lines(&all), ["deployment.apps/web", "daemonset.apps/agent"]);
    let sel = s.kubectl_ok(&[
        "get",
        "deploy",
        "-A",
        "--field-selector",
        "metadata.namespace=shop",
        "-o",
        "name",
    ]);
    assert_eq!(lines(&sel), ["deployment.apps/web"]);
    let none = s.kubectl_ok(&[
        "get",
        "deploy",
        "-A",
        "--field-selector",
        "metadata.name=other",
        "-o",
        "name",
    ]);
    assert_eq!(lines(&none), Vec::<&str>::new());
    let roles = s.kubectl_ok(&["get", "clusterroles", "-o", "name"]);
    assert_eq!(
        lines(&roles),
        ["clusterrole.rbac.authorization.k8s.io/shop-reader"]
    );
    // Cluster-scoped objects have no namespace, whatever -n says.
    let crb = s.kubectl_ok(&[
        "get",
        "clusterrolebinding",
        "shop-reader",
        "-n",
        "shop",
        "-o",
        "json",
    ]);
    let crb: serde_json::Value = serde_json::from_str(&crb).unwrap();
    assert!(crb["metadata"].get("namespace").is_none(), "{crb}");
    assert_eq!(crb["roleRef"]["name"], "shop-reader");
    let rules = s.kubectl_ok(&[
        "get",
        "role",
        "leases",
        "-n",
        "shop",
        "-o",
        "jsonpath={.rules[0].verbs}",
    ]);
    assert_eq!(rules, r#"["get","update"]"#);

    // What was applied comes back, with generation 1 and no status (no controller runs).
    let args = "jsonpath={.metadata.generation} {.spec.template.spec.containers[0].args} {.status}";
    let dep = s.kubectl_ok(&["get", "deploy", "web", "-n", "shop", "-o", args]);
    assert_eq!(dep, r#"1 ["--v=1"] "#);
    let ds = s.kubectl_ok(&["get", "ds", "agent", "-n", "shop", "-o", args]);
    assert_eq!(ds, r#"1 ["--v=1"] "#);

    // Re-applying the same file changes nothing; a changed one bumps generation and replaces the args.
    let out = s.kubectl_ok(&["apply", "-f", f.to_str().unwrap()]);
    assert_eq!(lines(&out).len(), OBJECTS.len());
    assert!(lines(&out).iter().all(|l| l.ends_with(" unchanged")), "{out}");
    let f2 = s.write("w2.yaml", &workloads("--v=2", "web2"));
    let out = s.kubectl_ok(&["apply", "-f", f2.to_str().unwrap()]);
    assert!(out.contains("daemonset.apps/agent configured"), "{out}");
    let ds = s.kubectl_ok(&["get", "ds", "agent", "-n", "shop", "-o", args]);
    assert_eq!(ds, r#"2 ["--v=2"] "#);
    // RoleBinding subjects are atomic upstream: the new list replaces the old one (not merged by name).
    for b in ["clusterrolebinding/shop-reader", "rolebinding/leases"] {
        let subjects = s.kubectl_ok(&["get", b, "-n", "shop", "-o", "jsonpath={.subjects[*].name}"]);
        assert_eq!(subjects, "web2", "{b}");
    }

    // Status goes through /status only; a spec write keeps it and bumps generation.
    s.kubectl_ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        "shop",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":2,"readyReplicas":2}}"#,
    ]);
    // (No `scale` subresource here, so `kubectl scale` is 404; a spec patch does the same.)
    s.kubectl_ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        "shop",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3},"status":{"readyReplicas":0}}"#,
    ]);
    let dep = s.kubectl_ok(&[
        "get",
        "deploy",
        "web",
        "-n",
        "shop",
        "-o",
        "jsonpath={.metadata.generation} {.spec.replicas} {.status.readyReplicas}",
    ]);
    assert_eq!(dep, "3 3 2");

    // Namespace last: the stand-in deletes a namespace's contents at once (no Terminating phase).
    let mut args = vec!["delete", "-n", "shop"];
    args.extend(OBJECTS.iter().rev());
    let out = s.kubectl_ok(&args);
    assert_eq!(lines(&out).len(), OBJECTS.len(), "{out}");
    for o in OBJECTS {
        let gone = s.kubectl(&["get", o, "-n", "shop"]);
        assert!(!gone.status.success(), "{o} still there");
        let err = String::from_utf8_lossy(&gone.stderr);
        assert!(
            err.contains("NotFound") || err.contains("not found"),
            "{o}: {err}"
        );
    }
}

#[test]
fn namespaced_kinds_in_a_missing_namespace_are_refused() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    let text = workloads("--v=1", "web");
    // Everything but the Namespace itself, so namespace "shop" never exists.
    let without_ns = text.split("---").skip(1).collect::<Vec<_>>().join("---");
    let f = s.write("no-ns.yaml", &without_ns);
    for mode in [&["apply"][..], &["apply", "--server-side"][..], &["create"][..]] {
        let mut args = mode.to_vec();
        args.extend(["-f", f.to_str().unwrap()]);
        let out = s.kubectl(&args);
        assert!(!out.status.success(), "{mode:?} succeeded in a missing namespace");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(r#"namespaces "shop" not found"#), "{mode:?}: {err}");
    }
    // The cluster-scoped ones went through; none of the namespaced ones exist.
    let roles = s.kubectl_ok(&["get", "clusterroles,clusterrolebindings", "-o", "name"]);
    assert_eq!(lines(&roles).len(), 2, "{roles}");
    let left = s.kubectl_ok(&["get", "deploy,ds,sa,role,rolebinding", "-A", "-o", "name"]);
    assert_eq!(lines(&left), Vec::<&str>::new());
}

#[test]
fn server_side_apply_of_a_daemonset_conflicts_between_managers() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    let f = s.write("w.yaml", &workloads("--v=1", "web"));
    let out = s.kubectl_ok(&["apply", "--server-side", "-f", f.to_str().unwrap()]);
    assert!(out.contains("daemonset.apps/agent serverside-applied"), "{out}");
    let f2 = s.write("w2.yaml", &workloads("--v=2", "web"));
    let out = s.kubectl(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        f2.to_str().unwrap(),
    ]);
    assert!(
        !out.status.success(),
        "a second manager took the args without force"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("conflict"), "{err}");
    s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        f2.to_str().unwrap(),
    ]);
    let ds = s.kubectl_ok(&[
        "get",
        "ds",
        "agent",
        "-n",
        "shop",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].args}",
    ]);
    assert_eq!(ds, r#"["--v=2"]"#);
}

#[test]
fn workload_selectors_are_validated_like_upstream() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    let dep = |selector: &str, labels: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  selector: {{matchLabels: {{{selector}}}}}\n  template:\n    metadata: {{labels: {{{labels}}}}}\n    spec: {{containers: [{{name: c, image: i}}]}}\n"
        )
    };
    let bad = s.write("bad.yaml", &dep("app: web", "app: api"));
    let out = s.kubectl(&["apply", "-f", bad.to_str().unwrap()]);
    assert!(
        !out.status.success(),
        "a selector that misses its template was stored"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is invalid") && err.contains("`selector` does not match template `labels`"),
        "{err}"
    );
    let good = s.write("good.yaml", &dep("app: web", "app: web"));
    s.kubectl_ok(&["apply", "-f", good.to_str().unwrap()]);
    let moved = s.write("moved.yaml", &dep("app: web2", "app: web2"));
    let out = s.kubectl(&["apply", "-f", moved.to_str().unwrap()]);
    assert!(!out.status.success(), "apps/v1 selector changed after creation");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("field is immutable"), "{err}");
    let sel = s.kubectl_ok(&[
        "get",
        "deploy",
        "web",
        "-o",
        "jsonpath={.spec.selector.matchLabels.app}",
    ]);
    assert_eq!(sel, "web");
}

/// The whitespace-separated words of each output line.
fn words(out: &str) -> Vec<Vec<String>> {
    lines(out)
        .iter()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

#[test]
fn get_prints_kubectls_columns_for_workloads_and_rbac() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    let f = s.write("w.yaml", &workloads("--v=1", "web"));
    s.kubectl_ok(&["apply", "-f", f.to_str().unwrap()]);
    s.kubectl_ok(&[
        "patch",
        "ds",
        "agent",
        "-n",
        "shop",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"desiredNumberScheduled":3,"currentNumberScheduled":3,"numberReady":2}}"#,
    ]);
    let ds = words(&s.kubectl_ok(&["get", "ds", "-n", "shop", "-o", "wide"]));
    assert_eq!(
        ds[0].join(" "),
        "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE CONTAINERS IMAGES SELECTOR"
    );
    // Name, desired, current, ready, up-to-date, available, node selector; then age; then wide.
    assert_eq!(ds[1][..7], ["agent", "3", "3", "2", "0", "0", "<none>"]);
    assert_eq!(ds[1][8..], ["agent", "agent:1", "app=agent"]);
    let dep = words(&s.kubectl_ok(&["get", "deploy", "-n", "shop"]));
    assert_eq!(dep[0].join(" "), "NAME READY UP-TO-DATE AVAILABLE AGE");
    assert_eq!(dep[1][..4], ["web", "0/2", "0", "0"]);
    let roles = words(&s.kubectl_ok(&["get", "clusterroles"]));
    assert_eq!(roles[0].join(" "), "NAME CREATED AT");
    assert_eq!(roles[1][0], "shop-reader");
    assert!(roles[1][1].ends_with('Z'), "{roles:?}");
    let rb = words(&s.kubectl_ok(&["get", "rolebinding", "-n", "shop", "-o", "wide"]));
    assert_eq!(rb[0].join(" "), "NAME ROLE AGE USERS GROUPS SERVICEACCOUNTS");
    assert_eq!(rb[1][..2], ["leases", "Role/leases"]);
    assert_eq!(rb[1].last().unwrap(), "shop/web");
    let sa = words(&s.kubectl_ok(&["get", "sa", "web", "-n", "shop"]));
    assert_eq!(sa[0].join(" "), "NAME SECRETS AGE");
    assert_eq!(sa[1][..2], ["web", "0"]);
}

#[test]
fn a_crd_shadowing_a_builtin_kind_serves_nothing_and_its_deletion_keeps_the_objects() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    // What crds/tests used to register before the stand-in served apps/v1 itself.
    let crd = s.write(
        "crd.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: daemonsets.apps}\nspec:\n  group: apps\n  scope: Namespaced\n  names: {plural: daemonsets, singular: daemonset, kind: DaemonSet}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n",
    );
    s.kubectl_ok(&["create", "-f", crd.to_str().unwrap()]);
    let apps = s.kubectl_ok(&["api-resources", "--api-group=apps", "-o", "name"]);
    assert_eq!(
        lines(&apps).iter().filter(|l| **l == "daemonsets.apps").count(),
        1,
        "{apps}"
    );
    let f = s.write("w.yaml", &workloads("--v=1", "web"));
    s.kubectl_ok(&["apply", "-f", f.to_str().unwrap()]);
    // The built-in handler answers: its validation still applies.
    let out = s.kubectl(&[
        "patch",
        "ds",
        "agent",
        "-n",
        "shop",
        "--type=merge",
        "-p",
        r#"{"spec":{"selector":null}}"#,
    ]);
    assert!(
        !out.status.success(),
        "the selector was removed: a schemaless CRD answered"
    );
    s.kubectl_ok(&["delete", "crd", "daemonsets.apps"]);
    let ds = s.kubectl_ok(&["get", "ds", "-n", "shop", "-o", "name"]);
    assert_eq!(lines(&ds), ["daemonset.apps/agent"]);
}
