//! The real kubectl against the stand-in, with a kubeconfig the binary wrote.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use common::{Server, kubectl_available};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wg]}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
"#;

fn objects(size: u32, port: u32) -> String {
    format!(
        r#"
apiVersion: example.com/v1
kind: Widget
metadata: {{name: w1, labels: {{tier: gold}}}}
spec: {{size: {size}}}
---
apiVersion: v1
kind: Service
metadata: {{name: applied, labels: {{app: applied}}}}
spec:
  selector: {{app: applied}}
  ports: [{{name: http, port: {port}, targetPort: 8080}}]
"#
    )
}

#[test]
fn apply_get_yaml_and_reapply() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    let crd = s.write("crd.yaml", CRD);
    let out = s.kubectl_ok(&["apply", "-f", crd.to_str().unwrap()]);
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"),
        "{out}"
    );
    s.kubectl_ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ]);

    let objs = s.write("objs.yaml", &objects(3, 80));
    let out = s.kubectl_ok(&["apply", "-f", objs.to_str().unwrap()]);
    assert!(
        out.contains("widget.example.com/w1 created") && out.contains("service/applied created"),
        "{out}"
    );

    let yaml = s.kubectl_ok(&["get", "svc", "applied", "-o", "yaml"]);
    for want in [
        "kind: Service",
        "name: applied",
        "port: 80",
        "targetPort: 8080",
        "protocol: TCP",
        "sessionAffinity: None",
        "clusterIP: 10.96.",
        "kubectl.kubernetes.io/last-applied-configuration",
    ] {
        assert!(yaml.contains(want), "missing {want:?} in\n{yaml}");
    }

    // A second apply computes a patch (strategic for Service, merge for the CRD) and the change lands.
    std::fs::write(&objs, objects(7, 81)).unwrap();
    let out = s.kubectl_ok(&["apply", "-f", objs.to_str().unwrap()]);
    assert!(
        out.contains("widget.example.com/w1 configured") && out.contains("service/applied configured"),
        "{out}"
    );
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "wg",
            "w1",
            "-o",
            "jsonpath={.spec.size} {.metadata.generation}"
        ]),
        "7 2"
    );
    assert_eq!(
        s.kubectl_ok(&["get", "svc", "applied", "-o", "jsonpath={.spec.ports[*].port}"]),
        "81"
    );
    let out = s.kubectl_ok(&["apply", "-f", objs.to_str().unwrap()]);
    assert!(out.contains("widget.example.com/w1 unchanged"), "{out}");
}

#[test]
fn crd_printer_columns_and_status_subresource() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    let crd = s.write("crd.yaml", CRD);
    s.kubectl_ok(&["apply", "-f", crd.to_str().unwrap()]);
    let objs = s.write("objs.yaml", &objects(5, 80));
    s.kubectl_ok(&["apply", "-f", objs.to_str().unwrap()]);
    s.kubectl_ok(&[
        "patch",
        "wg",
        "w1",
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]},"spec":{"size":99}}"#,
    ]);
    let table = s.kubectl_ok(&["get", "widgets"]);
    let lines: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["NAME", "SIZE", "READY", "AGE"], "{table}");
    assert_eq!(
        &lines[1][..3],
        ["w1", "5", "True"],
        "status write must not change spec:\n{table}"
    );
}

#[test]
fn create_services_allocates_cluster_ips_and_node_ports() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[
        "--service-cidr",
        "10.123.0.0/24",
        "--nodeport-range",
        "31000-31010",
    ]);
    s.kubectl_ok(&["create", "service", "clusterip", "c1", "--tcp=80:8080"]);
    s.kubectl_ok(&["create", "service", "nodeport", "n1", "--tcp=80:8080"]);
    s.kubectl_ok(&["create", "service", "loadbalancer", "l1", "--tcp=443:8443"]);
    s.kubectl_ok(&["create", "service", "clusterip", "h1", "--clusterip=None"]);
    let ips = s.kubectl_ok(&[
        "get",
        "svc",
        "c1",
        "n1",
        "l1",
        "h1",
        "-o",
        "jsonpath={.items[*].spec.clusterIP}",
    ]);
    let ips: Vec<&str> = ips.split_whitespace().collect();
    assert_eq!(ips.len(), 4, "{ips:?}");
    assert_eq!(ips[3], "None");
    let mut uniq = ips[..3].to_vec();
    uniq.dedup();
    assert_eq!(uniq.len(), 3);
    assert!(ips[..3].iter().all(|ip| ip.starts_with("10.123.0.")), "{ips:?}");
    let ports = s.kubectl_ok(&[
        "get",
        "svc",
        "n1",
        "l1",
        "-o",
        "jsonpath={.items[*].spec.ports[*].nodePort}",
    ]);
    let ports: Vec<u16> = ports.split_whitespace().map(|p| p.parse().unwrap()).collect();
    assert_eq!(ports.len(), 2);
    assert!(
        ports.iter().all(|p| (31000..=31010).contains(p)) && ports[0] != ports[1],
        "{ports:?}"
    );
    let c1 = s.kubectl_ok(&[
        "get",
        "svc",
        "c1",
        "-o",
        "jsonpath={.spec.ports[0].nodePort}|{.spec.type}",
    ]);
    assert_eq!(c1, "|ClusterIP");
    let table = s.kubectl_ok(&["get", "svc", "l1"]);
    assert!(
        table.contains("LoadBalancer")
            && table.contains("<pending>")
            && table.contains(&format!("443:{}/TCP", ports[1])),
        "{table}"
    );
    let wide = s.kubectl_ok(&["get", "svc", "c1", "-o", "wide"]);
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
            "SELECTOR"
        ],
        "{wide}"
    );
    assert!(wide.contains("app=c1"), "{wide}");
    // A requested nodePort that is taken is rejected with the apiserver's Invalid error.
    let out = s.kubectl(&[
        "create",
        "service",
        "nodeport",
        "n2",
        "--tcp=80:8080",
        &format!("--node-port={}", ports[0]),
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("provided port is already allocated"),
        "{out:?}"
    );
}

#[test]
fn dual_stack_services_from_kubectl() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&["--service-cidr", "10.123.0.0/24,fd00:123::/120"]);
    s.kubectl_ok(&["create", "service", "clusterip", "x", "--tcp=80"]);
    let get = |name: &str| {
        s.kubectl_ok(&[
            "get",
            "svc",
            name,
            "-o",
            "jsonpath={.spec.ipFamilyPolicy}|{.spec.ipFamilies[*]}|{.spec.clusterIP}|{.spec.clusterIPs[*]}",
        ])
    };
    assert_eq!(get("x"), "SingleStack|IPv4|10.123.0.17|10.123.0.17");
    // Upgrading keeps the IPv4 address and adds one from the IPv6 range.
    s.kubectl_ok(&[
        "patch",
        "svc",
        "x",
        "-p",
        r#"{"spec":{"ipFamilyPolicy":"PreferDualStack"}}"#,
    ]);
    assert_eq!(
        get("x"),
        "PreferDualStack|IPv4 IPv6|10.123.0.17|10.123.0.17 fd00:123::11"
    );
    // IPv6 first, as requested.
    let file = s.write(
        "v6first.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: v6first}\nspec:\n  ipFamilyPolicy: RequireDualStack\n  ipFamilies: [IPv6]\n  ports: [{port: 80}]\n",
    );
    s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    assert_eq!(
        get("v6first"),
        "RequireDualStack|IPv6 IPv4|fd00:123::12|fd00:123::12 10.123.0.18"
    );
    // Downgrading releases the secondary address: the next Service gets it.
    s.kubectl_ok(&[
        "patch",
        "svc",
        "x",
        "-p",
        r#"{"spec":{"ipFamilyPolicy":"SingleStack"}}"#,
    ]);
    assert_eq!(get("x"), "SingleStack|IPv4|10.123.0.17|10.123.0.17");
    s.kubectl_ok(&["create", "service", "clusterip", "z", "--tcp=80"]);
    s.kubectl_ok(&[
        "patch",
        "svc",
        "z",
        "-p",
        r#"{"spec":{"ipFamilyPolicy":"RequireDualStack"}}"#,
    ]);
    assert_eq!(
        get("z"),
        "RequireDualStack|IPv4 IPv6|10.123.0.19|10.123.0.19 fd00:123::11"
    );
    // The primary address cannot change.
    let out = s.kubectl(&[
        "patch",
        "svc",
        "z",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"clusterIPs":["10.123.0.19","fd00:123::99"]}}"#,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("spec.clusterIPs[1]: may not change once set"),
        "{err}"
    );

    // A single-stack cluster refuses RequireDualStack, naming the field.
    let single = Server::start(&["--service-cidr", "10.124.0.0/24"]);
    let file = single.write(
        "require.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: req}\nspec:\n  ipFamilyPolicy: RequireDualStack\n  ports: [{port: 80}]\n",
    );
    let out = single.kubectl(&["apply", "-f", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("spec.ipFamilyPolicy")
            && err.contains("not configured for dual-stack services"),
        "{err}"
    );
}

#[test]
fn patch_merge_and_json_and_label_selectors() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    s.kubectl_ok(&["create", "configmap", "a", "--from-literal=k=v"]);
    s.kubectl_ok(&["create", "configmap", "b", "--from-literal=k=v"]);
    s.kubectl_ok(&["label", "configmap", "a", "tier=gold"]);
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "b",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"labels":{"tier":"silver"}},"data":{"k":"w"}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "a",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/data/k","value":"v"},{"op":"add","path":"/data/n","value":"1"}]"#,
    ]);
    assert_eq!(s.kubectl_ok(&["get", "cm", "b", "-o", "jsonpath={.data.k}"]), "w");
    assert_eq!(s.kubectl_ok(&["get", "cm", "a", "-o", "jsonpath={.data.n}"]), "1");
    let failed = s.kubectl(&[
        "patch",
        "configmap",
        "a",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/data/k","value":"nope"}]"#,
    ]);
    assert!(!failed.status.success());

    let names = |sel: &str| s.kubectl_ok(&["get", "cm", "-l", sel, "-o", "name"]);
    assert_eq!(names("tier=gold"), "configmap/a\n");
    assert_eq!(names("tier in (gold,silver)"), "configmap/a\nconfigmap/b\n");
    assert_eq!(names("tier notin (gold)"), "configmap/b\n");
    assert_eq!(names("tier"), "configmap/a\nconfigmap/b\n");
    assert_eq!(names("!tier"), "");
    let out = s.kubectl_ok(&["get", "cm", "-l", "tier!=gold"]);
    assert!(out.contains("b ") && !out.contains("a "), "{out}");
}

#[test]
fn delete_waits_for_finalizers() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    s.kubectl_ok(&["create", "configmap", "held", "--from-literal=k=v"]);
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "held",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    s.kubectl_ok(&["delete", "configmap", "held", "--wait=false"]);
    let ts = s.kubectl_ok(&[
        "get",
        "cm",
        "held",
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
    ]);
    assert!(ts.ends_with('Z'), "deletionTimestamp expected, got {ts:?}");

    // A waiting `kubectl delete` only returns once the finalizer is gone.
    let mut waiting = s
        .kubectl_cmd(&["delete", "configmap", "held", "--timeout=30s"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        waiting.try_wait().unwrap().is_none(),
        "kubectl delete returned while a finalizer was set"
    );
    assert!(
        s.kubectl_ok(&["get", "cm", "held", "-o", "name"])
            .contains("configmap/held")
    );
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "held",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    let status = waiting.wait().unwrap();
    assert!(status.success());
    let gone = s.kubectl(&["get", "cm", "held"]);
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("NotFound"),
        "{gone:?}"
    );
}

#[test]
fn get_watch_sees_later_changes() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    s.kubectl_ok(&["create", "configmap", "early"]);
    let mut w = s
        .kubectl_cmd(&["get", "cm", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = w.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = |what: &str| loop {
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("no watch line for {what}"));
        if line.contains(what) {
            return line;
        }
    };
    next("early");
    s.kubectl_ok(&["create", "configmap", "late"]);
    assert!(next("late").starts_with("ADDED"));
    s.kubectl_ok(&["label", "configmap", "late", "x=y"]);
    assert!(next("late").starts_with("MODIFIED"));
    s.kubectl_ok(&["delete", "configmap", "late"]);
    assert!(next("late").starts_with("DELETED"));
    let _ = w.kill();
    let _ = w.wait();
}

/// The project's own CRDs (manifests/crds) apply, get established, and print their columns.
#[test]
fn project_crds_apply_and_print_their_columns() {
    if !kubectl_available() {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests/crds");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("SKIPPED: no {} in this checkout", dir.display());
        return;
    };
    let s = Server::start(&[]);
    let mut checked = 0;
    for e in entries {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("yaml") {
            continue;
        }
        let crd: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        // The folder also holds a kustomization.yaml; only CRDs are checked here.
        if crd["kind"].as_str() != Some("CustomResourceDefinition") {
            continue;
        }
        let name = crd["metadata"]["name"].as_str().unwrap().to_string();
        s.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
        s.kubectl_ok(&[
            "wait",
            "--for",
            "condition=established",
            &format!("crd/{name}"),
            "--timeout=10s",
        ]);
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap();
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap();
        let group = crd["spec"]["group"].as_str().unwrap();
        let version = &crd["spec"]["versions"][0];
        let obj = format!(
            "apiVersion: {group}/{}\nkind: {kind}\nmetadata: {{name: sample}}\n",
            version["name"].as_str().unwrap()
        );
        let f = s.write(&format!("{plural}.sample.yaml"), &obj);
        s.kubectl_ok(&["apply", "-f", f.to_str().unwrap()]);
        let cols = version["additionalPrinterColumns"]
            .as_sequence()
            .cloned()
            .unwrap_or_default();
        let wide = s.kubectl_ok(&["get", &format!("{plural}.{group}"), "-o", "wide"]);
        let narrow = s.kubectl_ok(&["get", &format!("{plural}.{group}")]);
        let header = |t: &str| {
            t.lines()
                .next()
                .unwrap_or("")
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        let (wide_h, narrow_h) = (header(&wide), header(&narrow));
        for c in &cols {
            let cname = c["name"].as_str().unwrap().to_uppercase();
            let prio = c["priority"].as_i64().unwrap_or(0);
            assert!(
                wide_h.contains(&cname),
                "{cname} missing from wide output of {plural}:\n{wide}"
            );
            assert_eq!(
                narrow_h.contains(&cname),
                prio == 0,
                "{cname} (priority {prio}) in narrow output of {plural}:\n{narrow}"
            );
        }
        assert!(narrow.contains("sample"), "{narrow}");
        checked += 1;
    }
    assert!(checked > 0, "no CRD manifests found in {}", dir.display());
}

#[test]
fn typed_create_commands_send_protobuf_we_decode() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "secret",
        "generic",
        "creds",
        "--from-literal=user=admin",
    ]);
    s.kubectl_ok(&["-n", "team", "create", "serviceaccount", "robot"]);
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "service",
        "externalname",
        "ext",
        "--external-name=example.org",
    ]);
    assert_eq!(
        s.kubectl_ok(&[
            "-n",
            "team",
            "get",
            "secret",
            "creds",
            "-o",
            "jsonpath={.data.user}"
        ]),
        "YWRtaW4="
    );
    assert_eq!(
        s.kubectl_ok(&["-n", "team", "get", "sa", "robot", "-o", "name"]),
        "serviceaccount/robot\n"
    );
    assert_eq!(
        s.kubectl_ok(&[
            "-n",
            "team",
            "get",
            "svc",
            "ext",
            "-o",
            "jsonpath={.spec.type} {.spec.externalName} {.spec.clusterIP}"
        ]),
        "ExternalName example.org "
    );
    let missing_ns = s.kubectl(&["-n", "nope", "create", "configmap", "x"]);
    assert!(
        String::from_utf8_lossy(&missing_ns.stderr).contains("namespaces \"nope\" not found"),
        "{missing_ns:?}"
    );
}

/// An events.k8s.io/v1 Event (what kube-rs's Recorder writes) shows up in `kubectl describe` and `get events`.
#[test]
fn describe_shows_events_k8s_io_events() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    s.kubectl_ok(&["create", "service", "loadbalancer", "web", "--tcp=80:8080"]);
    let uid = s.kubectl_ok(&["get", "svc", "web", "-o", "jsonpath={.metadata.uid}"]);
    let ev = format!(
        r#"
apiVersion: events.k8s.io/v1
kind: Event
metadata: {{name: web.ensuring, namespace: default}}
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: svcnet-cloud-controller
reportingInstance: test
action: EnsureLoadBalancer
reason: EnsuringLoadBalancer
note: Ensuring load balancer
type: Normal
regarding: {{apiVersion: v1, kind: Service, name: web, namespace: default, uid: {uid}}}
"#
    );
    let f = s.write("event.yaml", &ev);
    s.kubectl_ok(&["create", "-f", f.to_str().unwrap()]);
    let described = s.kubectl_ok(&["describe", "svc", "web"]);
    assert!(
        described.contains("EnsuringLoadBalancer") && described.contains("Ensuring load balancer"),
        "{described}"
    );
    let events = s.kubectl_ok(&["get", "events"]);
    assert!(
        events.contains("EnsuringLoadBalancer") && events.contains("service/web"),
        "{events}"
    );
}

const PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1, labels: {app: web}, finalizers: [example.com/hold]}
spec:
  nodeName: node-1
  containers:
  - name: serve
    image: serve:1
    ports: [{containerPort: 8080, protocol: TCP}, {containerPort: 8080, protocol: UDP}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-2, labels: {app: web}}
spec:
  containers: [{name: serve, image: serve:1}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: web, labels: {app: web}}
subsets:
- addresses: [{ip: 10.64.2.11, nodeName: node-2}, {ip: 10.64.1.10, nodeName: node-1}]
  notReadyAddresses: [{ip: 10.64.1.12, nodeName: node-1}]
  ports: [{name: http, port: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: many}
subsets:
- addresses: [{ip: 10.0.0.1}, {ip: 10.0.0.2}]
  ports: [{name: a, port: 1}, {name: b, port: 2}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: empty}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.64.2.11], conditions: {ready: true}}
- {addresses: [10.64.1.10], conditions: {ready: true}}
- {addresses: [10.64.1.12], conditions: {ready: false, serving: true, terminating: true}}
- {addresses: [10.64.1.13], conditions: {ready: true}}
"#;

const RUNNING: &str = r#"{"status":{"phase":"Running","podIP":"10.64.1.10","podIPs":[{"ip":"10.64.1.10"}],
  "hostIP":"10.128.0.2","conditions":[{"type":"Ready","status":"True"},{"type":"ContainersReady","status":"True"}],
  "containerStatuses":[{"name":"serve","ready":true,"restartCount":0,"state":{"running":{}}}]}}"#;

/// Cells of each output line: kubectl separates columns by at least 3 spaces, and some headers have one
/// (`NOMINATED NODE`).
fn cells(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        })
        .collect()
}

/// `kubectl get pod -o wide`, `get endpoints` and `get endpointslices` print upstream's columns, and a pod held by a finalizer
/// after its deletion shows `Terminating`.
#[test]
fn get_prints_kubectls_columns_for_pods_and_endpoints() {
    if !kubectl_available() {
        return;
    }
    let s = Server::start(&[]);
    let f = s.write("pods.yaml", PODS);
    s.kubectl_ok(&["apply", "-f", f.to_str().unwrap()]);
    let args = [
        "patch",
        "pod",
        "web-1",
        "--subresource=status",
        "--type=merge",
        "-p",
        RUNNING,
    ];
    s.kubectl_ok(&args);

    let pods = cells(&s.kubectl_ok(&["get", "pod", "-o", "wide"]));
    assert_eq!(
        pods[0],
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ]
    );
    let age = |row: &[String]| row[4].clone();
    assert!(age(&pods[1]).ends_with('s'), "{pods:?}");
    let mut web1 = pods[1].clone();
    web1.remove(4);
    assert_eq!(
        web1,
        [
            "web-1",
            "1/1",
            "Running",
            "0",
            "10.64.1.10",
            "node-1",
            "<none>",
            "<none>"
        ]
    );
    // Unscheduled and without status: the stand-in resets a new pod's status to phase Pending.
    let mut web2 = pods[2].clone();
    web2.remove(4);
    assert_eq!(
        web2,
        [
            "web-2", "0/1", "Pending", "0", "<none>", "<none>", "<none>", "<none>"
        ]
    );
    let narrow = cells(&s.kubectl_ok(&["get", "pod", "web-1"]));
    assert_eq!(narrow[0], ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);

    let eps = cells(&s.kubectl_ok(&["get", "endpoints"]));
    assert_eq!(eps[0], ["NAME", "ENDPOINTS", "AGE"]);
    let ep = |name: &str| {
        eps.iter()
            .find(|r| r[0] == name)
            .map(|r| r[1].clone())
            .unwrap_or_else(|| panic!("no row {name}: {eps:?}"))
    };
    // Ready addresses only, in the object's order; four pairs show as three and "+ 1 more...".
    assert_eq!(ep("web"), "10.64.2.11:8080,10.64.1.10:8080");
    assert_eq!(ep("many"), "10.0.0.1:1,10.0.0.2:1,10.0.0.1:2 + 1 more...");
    assert_eq!(ep("empty"), "<none>");
    // Slices list every endpoint, terminating ones too.
    let slices = cells(&s.kubectl_ok(&["get", "endpointslices"]));
    assert_eq!(slices[0], ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]);
    assert_eq!(
        slices[1][..4],
        [
            "web-abc",
            "IPv4",
            "8080",
            "10.64.2.11,10.64.1.10,10.64.1.12 + 1 more..."
        ]
    );

    // The walkthrough's command: every kind selected by the label, each with its own header.
    s.kubectl_ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let all = s.kubectl_ok(&["get", "pod,endpoints,service", "-o", "wide", "-l", "app=web"]);
    for want in [
        "pod/web-1",
        "pod/web-2",
        "endpoints/web",
        "service/web",
        "10.64.2.11:8080",
        "app=web",
    ] {
        assert!(all.contains(want), "{want} missing:\n{all}");
    }
    assert!(!all.contains("endpoints/many"), "{all}");

    // Deleting a pod that holds a finalizer: Terminating until the finalizer goes.
    s.kubectl_ok(&["delete", "pod", "web-1", "--wait=false"]);
    let pods = cells(&s.kubectl_ok(&["get", "pod", "web-1"]));
    assert_eq!(pods[1][..4], ["web-1", "1/1", "Terminating", "0"]);
    s.kubectl_ok(&[
        "patch",
        "pod",
        "web-1",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    let left = s.kubectl(&["get", "pod", "web-1"]);
    assert!(!left.status.success(), "{left:?}");
}
