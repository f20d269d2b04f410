//! Fault injection against the real server, replacing what the stand-in offered: an API server
//! restart keeps etcd's state and breaks watches (a watcher resuming from before the restart gets 410
//! Expired), and etcd compaction really removes history.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use svcnet_testcluster::{Cluster, Options};

fn rv(cluster: &Cluster, name: &str) -> String {
    cluster
        .kubectl_ok(&[
            "get",
            "configmap",
            name,
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
        .unwrap()
}

#[test]
fn restart_keeps_state_expires_old_watches_and_compaction_removes_history() {
    let mut cluster = Cluster::start_with(Options {
        controller_manager: false,
        ..Options::default()
    })
    .unwrap();
    cluster
        .kubectl_ok(&["create", "configmap", "c", "--from-literal=n=0"])
        .unwrap();
    let before = rv(&cluster, "c");
    for n in 1..=3 {
        cluster
            .kubectl_ok(&[
                "patch",
                "configmap",
                "c",
                "--type=merge",
                "-p",
                &format!(r#"{{"data":{{"n":"{n}"}}}}"#),
            ])
            .unwrap();
    }

    cluster.restart_apiserver().unwrap();
    assert_eq!(
        cluster
            .kubectl_ok(&["get", "configmap", "c", "-o", "jsonpath={.data.n}"])
            .unwrap(),
        "3",
        "state lost across the restart"
    );
    // The fresh watch cache starts at etcd's current revision: resuming from before it is 410.
    let path =
        format!("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={before}&timeoutSeconds=2");
    let out = cluster.kubectl_ok(&["get", "--raw", &path]).unwrap();
    let first: Value = serde_json::from_str(out.lines().next().unwrap_or("{}")).unwrap();
    assert_eq!(first["type"], "ERROR", "{out}");
    assert_eq!(first["object"]["code"], 410, "{out}");
    assert_eq!(first["object"]["reason"], "Expired", "{out}");

    let compacted = cluster.compact_etcd().unwrap();
    assert!(
        compacted >= before.parse::<i64>().unwrap(),
        "{compacted} < {before}"
    );
    // History before `compacted` is gone: etcd refuses to compact it again.
    let again = cluster.compact_etcd_to(compacted - 1).unwrap_err().to_string();
    assert!(again.contains("compacted"), "{again}");
    // And the API keeps working on top of the compacted store.
    cluster
        .kubectl_ok(&[
            "patch",
            "configmap",
            "c",
            "--type=merge",
            "-p",
            r#"{"data":{"n":"4"}}"#,
        ])
        .unwrap();
    assert!(rv(&cluster, "c").parse::<i64>().unwrap() > compacted);
}
