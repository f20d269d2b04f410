//! The official Rust client (google-cloud-compute-v1) against the fake: insert + poller, get,
//! list paging, regional verbs and error mapping. It sends `$alt=json&$apiVersion=...`, a Host
//! header without port, and polls GET operations.
mod common;

use common::{Fake, REGION, ZONE_B};
use google_cloud_compute_v1::client::{
    Firewalls, ForwardingRules, HttpHealthChecks, Instances, Routes, TargetPools,
};
use google_cloud_compute_v1::model::{
    Firewall, ForwardingRule, HttpHealthCheck, InstanceReference, Route, TargetPool,
    TargetPoolsAddInstanceRequest, firewall::Allowed, forwarding_rule::IPProtocol, operation::Status,
};
use google_cloud_gax::paginator::{ItemPaginator, Paginator};
use google_cloud_lro::Poller;

fn creds() -> google_cloud_auth::credentials::Credentials {
    google_cloud_auth::credentials::anonymous::Builder::new().build()
}

macro_rules! client {
    ($ty:ty, $fake:expr) => {
        <$ty>::builder()
            .with_endpoint(format!("http://127.0.0.1:{}", $fake.port))
            .with_credentials(creds())
            .build()
            .await
            .expect("client")
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_poll_get_list_with_the_official_rust_client() {
    let fake = Fake::start(&["--op-latency-ms", "600"]);
    let p = fake.project.clone();
    let fw = client!(Firewalls, fake);

    let started = std::time::Instant::now();
    let op = fw
        .insert()
        .set_project(&p)
        .set_body(
            Firewall::new()
                .set_name("k8s-fw-rust")
                .set_allowed([Allowed::new()
                    .set_ip_protocol("tcp")
                    .set_ports(["80", "8000-8080"])])
                .set_target_tags(["node"])
                .set_source_ranges(["10.0.0.0/8"]),
        )
        .poller()
        .until_done()
        .await
        .expect("insert completes");
    assert_eq!(op.status, Some(Status::Done));
    assert!(op.error.is_none(), "{op:?}");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(500),
        "the poller waited for DONE"
    );
    assert_eq!(
        op.target_link.as_deref(),
        Some(fake.link("global/firewalls/k8s-fw-rust").as_str())
    );

    let got = fw
        .get()
        .set_project(&p)
        .set_firewall("k8s-fw-rust")
        .send()
        .await
        .expect("get");
    assert_eq!(got.name.as_deref(), Some("k8s-fw-rust"));
    assert_eq!(got.target_tags, ["node"]);
    assert_eq!(got.allowed[0].ports, ["80", "8000-8080"]);
    assert_eq!(got.priority, Some(1000));
    assert_eq!(
        got.self_link.as_deref(),
        Some(fake.link("global/firewalls/k8s-fw-rust").as_str())
    );

    // Paging: 5 more rules, listed 2 per page through the paginator.
    fake.admin("POST", "op-latency", Some(&serde_json::json!({"ms": 0})));
    for i in 0..5 {
        fw.insert()
            .set_project(&p)
            .set_body(
                Firewall::new()
                    .set_name(format!("k8s-fw-page-{i}"))
                    .set_allowed([Allowed::new().set_ip_protocol("udp")]),
            )
            .poller()
            .until_done()
            .await
            .expect("insert");
    }
    let mut pages = fw.list().set_project(&p).set_max_results(2_u32).by_page();
    let mut names = Vec::new();
    let mut page_count = 0;
    while let Some(page) = pages.next().await {
        let page = page.expect("page");
        page_count += 1;
        names.extend(page.items.into_iter().filter_map(|f| f.name));
    }
    assert_eq!(page_count, 3);
    assert_eq!(names.len(), 6);
    let mut filtered = fw
        .list()
        .set_project(&p)
        .set_filter("name eq k8s-fw-page-.*")
        .by_item();
    let mut n = 0;
    while let Some(item) = filtered.next().await {
        assert!(
            item.expect("item")
                .name
                .unwrap_or_default()
                .starts_with("k8s-fw-page-")
        );
        n += 1;
    }
    assert_eq!(n, 5);

    // Errors map to HTTP statuses.
    let err = fw
        .get()
        .set_project(&p)
        .set_firewall("missing")
        .send()
        .await
        .expect_err("404");
    assert_eq!(err.http_status_code(), Some(404));
    let err = fw
        .insert()
        .set_project(&p)
        .set_body(
            Firewall::new()
                .set_name("k8s-fw-rust")
                .set_allowed([Allowed::new().set_ip_protocol("tcp")]),
        )
        .send()
        .await
        .expect_err("409");
    assert_eq!(err.http_status_code(), Some(409));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balancer_objects_and_routes_with_the_official_rust_client() {
    let fake = Fake::start(&["--op-latency-ms", "300"]);
    let p = fake.project.clone();
    fake.add_instance("node-1", ZONE_B, &["node"]);
    fake.add_instance("node-2", ZONE_B, &["node"]);

    let hc = client!(HttpHealthChecks, fake);
    hc.insert()
        .set_project(&p)
        .set_body(
            HttpHealthCheck::new()
                .set_name("k8s-hc")
                .set_port(10256)
                .set_request_path("/healthz"),
        )
        .poller()
        .until_done()
        .await
        .expect("hc");

    let tp = client!(TargetPools, fake);
    let op = tp
        .insert()
        .set_project(&p)
        .set_region(REGION)
        .set_body(
            TargetPool::new()
                .set_name("a1234")
                .set_instances([fake.link(&format!("zones/{ZONE_B}/instances/node-1"))])
                .set_health_checks([fake.link("global/httpHealthChecks/k8s-hc")]),
        )
        .poller()
        .until_done()
        .await
        .expect("pool");
    assert_eq!(
        op.region.as_deref(),
        Some(fake.link(&format!("regions/{REGION}")).as_str())
    );
    tp.add_instance()
        .set_project(&p)
        .set_region(REGION)
        .set_target_pool("a1234")
        .set_body(TargetPoolsAddInstanceRequest::new().set_instances([
            InstanceReference::new().set_instance(fake.link(&format!("zones/{ZONE_B}/instances/node-2"))),
        ]))
        .poller()
        .until_done()
        .await
        .expect("addInstance");
    let pool = tp
        .get()
        .set_project(&p)
        .set_region(REGION)
        .set_target_pool("a1234")
        .send()
        .await
        .expect("get");
    assert_eq!(pool.instances.len(), 2);

    let fr = client!(ForwardingRules, fake);
    fr.insert()
        .set_project(&p)
        .set_region(REGION)
        .set_body(
            ForwardingRule::new()
                .set_name("a1234")
                .set_ip_protocol(IPProtocol::Tcp)
                .set_port_range("80")
                .set_target(fake.link(&format!("regions/{REGION}/targetPools/a1234"))),
        )
        .poller()
        .until_done()
        .await
        .expect("fr");
    let got = fr
        .get()
        .set_project(&p)
        .set_region(REGION)
        .set_forwarding_rule("a1234")
        .send()
        .await
        .expect("get");
    assert_eq!(got.port_range.as_deref(), Some("80-80"));
    assert_eq!(got.ip_protocol, Some(IPProtocol::Tcp));
    let ip = got.ip_address.clone().unwrap_or_default();
    assert!(
        ip.starts_with("203.0.113."),
        "ephemeral IP from the external range: {ip}"
    );

    // Deleting the pool while the rule uses it: the HTTP call fails with 400.
    let err = tp
        .delete()
        .set_project(&p)
        .set_region(REGION)
        .set_target_pool("a1234")
        .send()
        .await
        .expect_err("in use");
    assert_eq!(err.http_status_code(), Some(400));
    // The GCE reason is reachable from the client error (the controller tells quota from rate
    // limit this way): the client turns Google's `errors[].reason` into an ErrorInfo detail.
    let status = err.status().expect("parsed status");
    assert!(status.message.contains("already being used by"), "{status:?}");
    let reasons: Vec<&str> = status
        .details
        .iter()
        .filter_map(|d| match d {
            google_cloud_gax::error::rpc::StatusDetails::ErrorInfo(i) => Some(i.reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, ["resourceInUseByAnotherResource"], "{status:?}");
    assert_eq!(status.code, google_cloud_gax::error::rpc::Code::InvalidArgument);

    let routes = client!(Routes, fake);
    routes
        .insert()
        .set_project(&p)
        .set_body(
            Route::new()
                .set_name("cluster-node-1")
                .set_dest_range("10.64.1.0/24")
                .set_network("global/networks/default")
                .set_next_hop_instance(format!("zones/{ZONE_B}/instances/node-1")),
        )
        .poller()
        .until_done()
        .await
        .expect("route");
    let r = routes
        .get()
        .set_project(&p)
        .set_route("cluster-node-1")
        .send()
        .await
        .expect("route get");
    assert_eq!(
        r.next_hop_instance.as_deref(),
        Some(fake.link(&format!("zones/{ZONE_B}/instances/node-1")).as_str())
    );

    let inst = client!(Instances, fake);
    let i = inst
        .get()
        .set_project(&p)
        .set_zone(ZONE_B)
        .set_instance("node-1")
        .send()
        .await
        .expect("instance");
    assert_eq!(i.network_interfaces[0].network_ip.as_deref(), Some("10.128.0.2"));
    // Aggregated lists: items keyed by scope; empty scopes carry a warning the client must parse.
    let agg = inst
        .aggregated_list()
        .set_project(&p)
        .set_include_all_scopes(true)
        .send()
        .await
        .expect("aggregated");
    let in_b: Vec<_> = agg.items[&format!("zones/{ZONE_B}")]
        .instances
        .iter()
        .filter_map(|i| i.name.clone())
        .collect();
    assert_eq!(in_b, ["node-1", "node-2"]);
    assert!(agg.items[&format!("zones/{}", common::ZONE_C)].warning.is_some());
    let frs = fr
        .aggregated_list()
        .set_project(&p)
        .send()
        .await
        .expect("aggregated rules");
    assert_eq!(frs.items[&format!("regions/{REGION}")].forwarding_rules.len(), 1);
    // setTags with the current fingerprint.
    inst.set_tags()
        .set_project(&p)
        .set_zone(ZONE_B)
        .set_instance("node-1")
        .set_body(
            google_cloud_compute_v1::model::Tags::new()
                .set_items(["node", "lb"])
                .set_fingerprint(
                    i.tags
                        .as_ref()
                        .and_then(|t| t.fingerprint.clone())
                        .unwrap_or_default(),
                ),
        )
        .poller()
        .until_done()
        .await
        .expect("setTags");
    let i = inst
        .get()
        .set_project(&p)
        .set_zone(ZONE_B)
        .set_instance("node-1")
        .send()
        .await
        .expect("instance");
    assert_eq!(
        i.tags.map(|t| t.items),
        Some(vec!["node".to_string(), "lb".to_string()])
    );

    // An operation that ends DONE with an error: the poller returns Ok, the error is in the op.
    fake.admin(
        "POST",
        "faults",
        Some(
            &serde_json::json!({"method": "POST", "pathRegex": "/routes$", "count": 1,
                                  "reason": "quotaExceeded", "mode": "operation"}),
        ),
    );
    let op = routes
        .insert()
        .set_project(&p)
        .set_body(
            Route::new()
                .set_name("cluster-node-2")
                .set_dest_range("10.64.2.0/24")
                .set_network("global/networks/default")
                .set_next_hop_instance(format!("zones/{ZONE_B}/instances/node-2")),
        )
        .poller()
        .until_done()
        .await;
    match op {
        Ok(op) => {
            assert_eq!(op.http_error_status_code, Some(403), "{op:?}");
            let errs = op.error.expect("error").errors;
            assert_eq!(errs[0].code.as_deref(), Some("QUOTA_EXCEEDED"));
        }
        Err(e) => assert_eq!(e.http_status_code(), Some(403), "{e:?}"),
    }
    let err = routes
        .get()
        .set_project(&p)
        .set_route("cluster-node-2")
        .send()
        .await
        .expect_err("not created");
    assert_eq!(err.http_status_code(), Some(404));
}
