use super::*;
use crate::metrics::{OPENMETRICS_CONTENT_TYPE, metrics_router};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends one HTTP/1.1 request and reads the whole reply (the server closes the connection).
async fn get(addr: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).await.expect("read");
    reply
}

#[tokio::test]
async fn serves_metrics_until_shutdown() {
    let mut registry = Registry::default();
    let syncs = Counter::<u64>::default();
    registry.register("svcnet_test_syncs", "Test counter", syncs.clone());
    syncs.inc_by(3);

    let listener = bind("127.0.0.1:0".parse().expect("addr")).await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    assert_ne!(addr.port(), 0);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_listener(
        listener,
        metrics_router(Arc::new(registry)),
        async move {
            let _ = stopped.await;
        },
    ));

    let reply = get(addr, "/metrics").await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let lower = reply.to_ascii_lowercase();
    assert!(
        lower.contains(&format!("content-type: {OPENMETRICS_CONTENT_TYPE}")),
        "{reply}"
    );
    assert!(reply.contains("svcnet_test_syncs_total 3"), "{reply}");
    assert!(reply.trim_end().ends_with("# EOF"), "{reply}");

    let missing = get(addr, "/nope").await;
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");

    stop.send(()).expect("server still running");
    let result = tokio::time::timeout(std::time::Duration::from_secs(5), server)
        .await
        .expect("server stops after shutdown")
        .expect("server task");
    assert!(result.is_ok(), "{result:?}");
}

#[tokio::test]
async fn bind_reports_the_address_in_use() {
    let first = bind("127.0.0.1:0".parse().expect("addr")).await.expect("bind");
    let addr = first.local_addr().expect("local addr");
    match bind(addr).await {
        Err(CoreError::Bind { addr: reported, .. }) => assert_eq!(reported, addr),
        other => panic!("expected a bind error, got {other:?}"),
    }
}
