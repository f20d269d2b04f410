//! The control plane is the real one and works as a cluster does: `kubectl version` names the pinned
//! release, the components' kubeconfigs get exactly their manifests' RBAC, the ReplicaSet controller
//! makes Pods for a Deployment, and node IPAM gives a Node a podCIDR out of the cluster CIDR.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::Value;
use svcnet_testcluster::{Cluster, Component, wait};

/// Polls `f` every 250 ms for up to 60 s; panics with the components' log tails otherwise.
fn eventually<T>(what: &str, cluster: &Cluster, f: impl FnMut() -> Option<T>) -> T {
    wait::poll(Duration::from_secs(60), Duration::from_millis(250), f)
        .unwrap_or_else(|| panic!("{what}: not within 60 s\n{}", cluster.log_tails(20)))
}

fn json(cluster: &Cluster, args: &[&str]) -> Value {
    serde_json::from_str(&cluster.kubectl_ok(args).unwrap()).unwrap()
}

#[test]
fn real_control_plane_serves_rbac_deployments_and_pod_cidrs() {
    let cluster = Cluster::start().unwrap();

    // kubectl version: the server is the pinned release, not a stand-in.
    let v = json(&cluster, &["version", "-o", "json"]);
    assert_eq!(v["serverVersion"]["gitVersion"], "v1.34.12", "{v}");
    assert_eq!(v["serverVersion"]["major"], "1", "{v}");
    assert_eq!(v["serverVersion"]["minor"], "34", "{v}");

    // The proxy's identity: list/watch Services, nothing else.
    let proxy = cluster.component_kubeconfig(Component::Proxy).unwrap();
    let whoami = cluster
        .kubectl_as(
            &proxy,
            &["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"],
        )
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&whoami.stdout),
        "system:serviceaccount:kube-system:svcnet-proxy",
        "{}",
        String::from_utf8_lossy(&whoami.stderr)
    );
    let allowed = cluster.kubectl_as(&proxy, &["get", "services", "-A"]).unwrap();
    assert!(
        allowed.status.success(),
        "svcnet-proxy may list services: {}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    let denied = cluster
        .kubectl_as(&proxy, &["create", "configmap", "nope", "-n", "default"])
        .unwrap();
    assert!(
        !denied.status.success(),
        "svcnet-proxy must not create configmaps"
    );
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert!(stderr.contains("forbidden"), "{stderr}");
    let denied = cluster.kubectl_as(&proxy, &["get", "secrets", "-A"]).unwrap();
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("forbidden"),
        "svcnet-proxy must not list secrets"
    );

    // The controller's identity: it may update Service status, the proxy may not.
    let ccm = cluster.component_kubeconfig(Component::CloudController).unwrap();
    for (kc, want) in [(&ccm, "yes"), (&proxy, "no")] {
        let out = cluster
            .kubectl_as(kc, &["auth", "can-i", "patch", "services/status", "-A"])
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            want,
            "{}",
            kc.display()
        );
    }

    // deployment -> replicaset -> pods (no scheduler or kubelet: they stay Pending, but they exist).
    cluster
        .kubectl_ok(&[
            "create",
            "deployment",
            "hostnames",
            "--image=registry.k8s.io/serve_hostname",
            "--replicas=2",
        ])
        .unwrap();
    eventually("2 pods of deployment hostnames", &cluster, || {
        let pods = json(&cluster, &["get", "pods", "-l", "app=hostnames", "-o", "json"]);
        (pods["items"].as_array().map(Vec::len) == Some(2)).then_some(())
    });

    // A Node gets a podCIDR from node IPAM, inside --cluster-cidr with the configured mask.
    cluster
        .apply("apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n")
        .unwrap();
    let cidr = eventually("node-1 podCIDR", &cluster, || {
        let node = json(&cluster, &["get", "node", "node-1", "-o", "json"]);
        node["spec"]["podCIDR"].as_str().map(str::to_owned)
    });
    assert!(
        cidr.starts_with("10.6") && cidr.ends_with("/24"),
        "podCIDR {cidr} not a /24 of 10.64.0.0/14"
    );
}
