//! The real gcloud, pointed at the fake GCE after the controller ran, lists what the seed
//! article shows: `routes list`, `firewall-rules list`, `forwarding-rules list --filter
//! IPAddress=...`, `target-pools list NAME` with the article's table format. Prints
//! `SKIPPED:` (and does not pass silently) when gcloud is not installed.
#![allow(clippy::unwrap_used)]

mod common;

use common::gcloud::{Gcloud, have_gcloud};
use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcloud_lists_what_the_seed_article_shows() {
    if !have_gcloud("the gcloud listing test") {
        return;
    }
    let api_server = ApiServer::start();
    let gce = FakeGce::start(&[]);
    let client = api_server.client().await;
    let node = add_node(&client, &gce, "gke-node-1", ZONE, Some("10.76.0.0/24")).await;
    let _ctl = Controller::start(&api_server, &gce, &[]);
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(&PostParams::default(), &lb_service("hostnames", &[80]))
        .await
        .unwrap();
    let (svc, ip) = wait_ingress(&client, "hostnames").await;
    let lb = lb_name(&svc);
    let route = format!("{CLUSTER}-{}", node.metadata.uid.clone().unwrap());
    eventually("node route", WAIT, || async { gce.find("routes", &route) }).await;
    let g = Gcloud::new(&gce);

    // gcloud compute routes list --filter=network=default
    let routes = g.json(&["compute", "routes", "list", "--filter=network=default"]);
    let r = routes
        .iter()
        .find(|r| r["name"] == route.as_str())
        .expect("node route listed");
    assert_eq!(r["destRange"], "10.76.0.0/24");
    assert!(
        r["nextHopInstance"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{ZONE}/instances/gke-node-1"))
    );
    let table = g.run(&["compute", "routes", "list", "--filter=network=default"]);
    let row = table.lines().find(|l| l.starts_with(&route)).expect("route row");
    assert!(
        row.contains("10.76.0.0/24") && row.contains(&format!("{ZONE}/instances/gke-node-1")),
        "{row}"
    );

    // gcloud compute firewall-rules list --filter=network=default
    let fws = g.json(&["compute", "firewall-rules", "list", "--filter=network=default"]);
    let fw = fws
        .iter()
        .find(|f| f["name"] == format!("k8s-fw-{lb}").as_str())
        .expect("k8s-fw listed");
    assert_eq!(fw["sourceRanges"][0], "0.0.0.0/0");
    assert_eq!(fw["targetTags"][0], NODE_TAG);
    let table = g.run(&["compute", "firewall-rules", "list", "--filter=network=default"]);
    let row = table
        .lines()
        .find(|l| l.starts_with(&format!("k8s-fw-{lb}")))
        .expect("firewall row");
    assert!(row.contains("default") && row.contains("tcp:80"), "{row}");
    // Today's gcloud no longer prints SRC_RANGES/TARGET_TAGS by default: ask for the article's columns.
    let table = g.run(&[
        "compute",
        "firewall-rules",
        "list",
        "--filter=network=default",
        "--format=table(name,network.basename(),sourceRanges.list():label=SRC_RANGES,\
         allowed[].map().firewall_rule().list():label=RULES,targetTags.list():label=TARGET_TAGS)",
    ]);
    let row = table
        .lines()
        .find(|l| l.starts_with(&format!("k8s-fw-{lb}")))
        .expect("firewall row");
    assert!(
        row.contains("0.0.0.0/0") && row.contains("tcp:80") && row.contains(NODE_TAG),
        "{table}"
    );

    // gcloud compute forwarding-rules list --filter IPAddress=<ip>
    let frs = g.json(&[
        "compute",
        "forwarding-rules",
        "list",
        "--filter",
        &format!("IPAddress={ip}"),
    ]);
    assert_eq!(frs.len(), 1, "{frs:?}");
    assert_eq!(frs[0]["name"], lb.as_str());
    assert_eq!(frs[0]["IPProtocol"], "TCP");
    assert!(
        frs[0]["target"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{REGION}/targetPools/{lb}"))
    );
    let table = g.run(&[
        "compute",
        "forwarding-rules",
        "list",
        "--filter",
        &format!("IPAddress={ip}"),
    ]);
    let row = table
        .lines()
        .find(|l| l.starts_with(&lb))
        .expect("forwarding rule row");
    assert!(
        row.contains(&ip) && row.contains("TCP") && row.contains(&format!("{REGION}/targetPools/{lb}")),
        "{row}"
    );

    // gcloud compute target-pools list NAME --format='table(name,region,instances.map().basename().join(","))'
    let table = g.run(&[
        "compute",
        "target-pools",
        "list",
        &lb,
        "--format=table(name,region,instances.map().basename().join(\",\"))",
    ]);
    let row = table
        .lines()
        .find(|l| l.starts_with(&lb))
        .expect("target pool row");
    assert!(row.contains(REGION) && row.contains("gke-node-1"), "{table}");
}
