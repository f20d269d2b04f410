//! The real gcloud, pointed at the fake GCE after the controller built an internal load balancer,
//! reads it as on GCE: `forwarding-rules describe`, `backend-services describe --region`,
//! `health-checks describe`, `instance-groups unmanaged list-instances`. Prints `SKIPPED:` when
//! gcloud is not installed.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use serde_json::Value;

struct Gcloud {
    config: tempfile::TempDir,
    token: tempfile::NamedTempFile,
    port: u16,
}

impl Gcloud {
    fn new(gce: &FakeGce) -> Self {
        let config = tempfile::tempdir().unwrap();
        let token = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(token.path(), "svcnet-fake-token\n").unwrap();
        Gcloud {
            config,
            token,
            port: gce.port,
        }
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = Command::new("gcloud")
            .args(args)
            .arg("--format=json")
            .env("CLOUDSDK_CONFIG", self.config.path())
            .env("CLOUDSDK_CORE_PROJECT", PROJECT)
            .env(
                "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE",
                format!("http://127.0.0.1:{}/compute/v1/", self.port),
            )
            .env("CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", self.token.path())
            .env("CLOUDSDK_CORE_DISABLE_PROMPTS", "1")
            .env("CLOUDSDK_CORE_CHECK_GCE_METADATA", "false")
            .env("CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK", "1")
            .output()
            .expect("run gcloud");
        assert!(
            out.status.success(),
            "gcloud {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn have_gcloud() -> bool {
    let ok = Command::new("gcloud")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("SKIPPED: gcloud is not installed; the gcloud internal LB test did not run");
    }
    ok
}

fn last(v: &Value) -> &str {
    v.as_str().and_then(|s| s.rsplit('/').next()).unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcloud_reads_an_internal_load_balancer() {
    if !have_gcloud() {
        return;
    }
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    add_node(&client, &gce, "node-2", ZONE, None).await;
    let _ctl = Controller::start(&api_server, &gce, &[]);
    let cid = cluster_id(&client).await;
    let mut svc = lb_service("db", &[5432]);
    svc.metadata.annotations = Some(
        [(
            "networking.gke.io/load-balancer-type".to_owned(),
            "Internal".to_owned(),
        )]
        .into(),
    );
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services.create(&PostParams::default(), &svc).await.unwrap();
    let (svc, ip) = wait_ingress(&client, "db").await;
    let lb = lb_name(&svc);
    let g = Gcloud::new(&gce);

    let fr = g.json(&["compute", "forwarding-rules", "describe", &lb, "--region", REGION]);
    assert_eq!(fr["IPAddress"], ip.as_str());
    assert_eq!(fr["loadBalancingScheme"], "INTERNAL");
    assert_eq!(fr["IPProtocol"], "TCP");
    assert_eq!(fr["ports"], serde_json::json!(["5432"]));
    assert_eq!(last(&fr["backendService"]), lb);
    assert_eq!(last(&fr["subnetwork"]), "default");

    let bs = g.json(&["compute", "backend-services", "describe", &lb, "--region", REGION]);
    assert_eq!(bs["loadBalancingScheme"], "INTERNAL");
    assert_eq!(bs["protocol"], "TCP");
    assert_eq!(bs["sessionAffinity"], "NONE");
    assert_eq!(last(&bs["healthChecks"][0]), format!("k8s-{cid}-node"));
    assert_eq!(last(&bs["backends"][0]["group"]), format!("k8s-ig--{cid}"));

    let hc = g.json(&["compute", "health-checks", "describe", &format!("k8s-{cid}-node")]);
    assert_eq!(hc["type"], "HTTP");
    assert_eq!(hc["httpHealthCheck"]["port"], 10256);
    assert_eq!(hc["httpHealthCheck"]["requestPath"], "/healthz");

    let members = g.json(&[
        "compute",
        "instance-groups",
        "unmanaged",
        "list-instances",
        &format!("k8s-ig--{cid}"),
        "--zone",
        ZONE,
    ]);
    let mut names: Vec<&str> = members
        .as_array()
        .unwrap()
        .iter()
        .map(|m| last(&m["instance"]))
        .collect();
    names.sort();
    assert_eq!(names, ["node-1", "node-2"]);
    let groups = g.json(&["compute", "instance-groups", "unmanaged", "list"]);
    let groups = groups.as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0]["name"], format!("k8s-ig--{cid}"));
    assert_eq!(groups[0]["size"], 2);
    assert_eq!(last(&groups[0]["zone"]), ZONE);
}
