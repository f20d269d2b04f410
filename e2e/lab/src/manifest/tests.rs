#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use super::*;

const DOCS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: svcnet-proxy-h4sh, namespace: kube-system}
data:
  config.conf: |
    clientConnection:
      kubeconfig: /var/lib/svcnet-proxy/kubeconfig.conf
  kubeconfig.conf: "server: http://10.128.0.1:6443\n"
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: svcnet-proxy, namespace: kube-system}
spec:
  template:
    spec:
      containers:
        - name: p
          command: [/usr/local/bin/svcnet-proxy, run, --config=/var/lib/svcnet-proxy/config.conf]
          args: [--hostname-override=$(NODE_NAME), --x=$(UNSET)]
          env:
            - name: NODE_NAME
              valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
          volumeMounts:
            - {name: config, mountPath: /var/lib/svcnet-proxy}
            - {name: xtables-lock, mountPath: /run/xtables.lock}
      volumes:
        - name: config
          configMap: {name: svcnet-proxy-h4sh}
        - name: xtables-lock
          hostPath: {path: /run/xtables.lock}
"#;

fn fields(node: &str) -> BTreeMap<&'static str, String> {
    BTreeMap::from([("spec.nodeName", node.to_owned())])
}

#[test]
fn argv_env_and_configmap_mounts_map_to_the_lab() {
    let docs = parse(DOCS).unwrap();
    let l = launch(&docs, PROXY, Path::new("/lab/config"), &fields("node-2")).unwrap();
    assert_eq!(l.bin, "svcnet-proxy");
    assert_eq!(
        l.args,
        [
            "run",
            "--config=/lab/config/svcnet-proxy/config/config.conf",
            "--hostname-override=node-2",
            "--x=$(UNSET)",
        ]
    );
    let files: BTreeMap<String, String> = l
        .files
        .iter()
        .map(|(p, c)| (p.display().to_string(), c.clone()))
        .collect();
    assert_eq!(
        files["/lab/config/svcnet-proxy/config/config.conf"],
        "clientConnection:\n  kubeconfig: /lab/config/svcnet-proxy/config/kubeconfig.conf\n"
    );
    assert!(files.contains_key("/lab/config/svcnet-proxy/config/kubeconfig.conf"));
    assert_eq!(files.len(), 2, "hostPath volumes write nothing");
}

#[test]
fn a_downward_api_field_without_a_lab_value_is_an_error() {
    let docs = parse(DOCS).unwrap();
    let err = launch(&docs, PROXY, Path::new("/c"), &BTreeMap::new()).unwrap_err();
    assert!(err.to_string().contains("spec.nodeName"), "{err}");
    assert!(launch(&docs, CONTROLLER, Path::new("/c"), &fields("n")).is_err());
}
