//! The API server restarts and etcd is compacted under a running controller: its watches break,
//! resume from a resourceVersion the new API server no longer serves (410 Gone) and relist. Every
//! change made meanwhile must still be acted on: a Service created, a Service deleted and a Node
//! added right after the restart.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, PostParams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_and_compaction_lose_no_update() {
    let mut api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    install_crd(&client).await;
    add_node(&client, &gce, "node-1", ZONE, None).await;
    // The production lease (15 s, renewed 5 s early) outlives the restart; the harness's 3 s
    // lease would expire during it and the controller would exit, as upstream's does.
    let mut ctl = Controller::start(
        &api_server,
        &gce,
        &[
            "--controllers",
            "service",
            "--leader-elect-lease-duration-seconds",
            "15",
            "--leader-elect-grace-seconds",
            "5",
        ],
    );
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(&PostParams::default(), &lb_service("before", &[80]))
        .await
        .unwrap();
    let (before, _) = wait_ingress(&client, "before").await;
    let before_lb = lb_name(&before);

    // Restart (every watch breaks), then compact etcd past everything the controller has seen.
    let t0 = std::time::Instant::now();
    api_server.restart();
    let rev = api_server.compact();
    eprintln!(
        "kube-apiserver restarted in {:.1} s, etcd compacted at revision {rev}",
        t0.elapsed().as_secs_f64()
    );
    let client = api_server.client().await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(&PostParams::default(), &lb_service("after", &[8080]))
        .await
        .unwrap();
    services.delete("before", &DeleteParams::default()).await.unwrap();
    add_node(&client, &gce, "node-2", ZONE_C, None).await;

    let (after, ip) = wait_ingress(&client, "after").await;
    let after_lb = lb_name(&after);
    assert_eq!(
        gce.find("forwardingRules", &after_lb).unwrap()["IPAddress"],
        ip.as_str()
    );
    eventually("the deleted Service's LB torn down", WAIT, || async {
        let gone = gce.find("forwardingRules", &before_lb).is_none()
            && gce.find("targetPools", &before_lb).is_none()
            && gce.find("firewalls", &format!("k8s-fw-{before_lb}")).is_none();
        gone.then_some(())
    })
    .await;
    eventually("the Service object released (finalizer removed)", WAIT, || {
        let services = services.clone();
        async move { services.get_opt("before").await.ok()?.is_none().then_some(()) }
    })
    .await;
    let pool = eventually("the new node in the pool", WAIT, || async {
        let pool = gce.find("targetPools", &after_lb)?;
        (pool["instances"].as_array()?.len() == 2).then_some(pool)
    })
    .await;
    let instances: Vec<&str> = pool["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    assert!(
        instances
            .iter()
            .any(|i| i.ends_with(&format!("/zones/{ZONE_C}/instances/node-2"))),
        "{instances:?}"
    );
    assert!(
        ctl.is_running(),
        "the controller survived the restart (its lease outlived it)"
    );
}
