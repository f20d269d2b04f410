//! The library entry point: other crates' tests (the cloud controller's) can run the fake
//! in-process with `svcnet_fake_gce::start` instead of spawning the binary.
use google_cloud_compute_v1::client::Firewalls;
use google_cloud_compute_v1::model::{Firewall, firewall::Allowed};
use google_cloud_lro::Poller;
use svcnet_fake_gce::Config;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_serve_and_stop_in_process() {
    let mut cfg = Config::new("in-proc", "europe-west1", &["europe-west1-b"]);
    cfg.op_latency_ms = 200;
    let fake = svcnet_fake_gce::start(cfg).await.expect("start");
    assert_eq!(
        fake.base_url,
        format!("http://127.0.0.1:{}/compute/v1/", fake.port())
    );
    let client = Firewalls::builder()
        .with_endpoint(fake.endpoint())
        .with_credentials(google_cloud_auth::credentials::anonymous::Builder::new().build())
        .build()
        .await
        .expect("client");
    let op = client
        .insert()
        .set_project("in-proc")
        .set_body(
            Firewall::new()
                .set_name("fw")
                .set_allowed([Allowed::new().set_ip_protocol("tcp")]),
        )
        .poller()
        .until_done()
        .await
        .expect("insert");
    assert!(op.error.is_none());
    let got = client
        .get()
        .set_project("in-proc")
        .set_firewall("fw")
        .send()
        .await
        .expect("get");
    assert_eq!(
        got.self_link,
        Some(format!("{}projects/in-proc/global/firewalls/fw", fake.base_url))
    );
    let port = fake.port();
    fake.stop().await;
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "listener closed after stop"
    );

    let bad = svcnet_fake_gce::start(Config::new("p", "us-east1", &["europe-west1-b"])).await;
    assert!(matches!(bad, Err(svcnet_fake_gce::Error::Config(_))));
}
