//! Auto-discovery on a GCE VM: project and zone from the metadata server when flags and the
//! config file leave them out. `GCE_METADATA_HOST` (host:port) overrides the server, as in
//! Google's client libraries. Plain HTTP/1.0 over tokio: the server is link-local and tiny.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const DEFAULT_HOST: &str = "169.254.169.254:80";

pub fn host() -> String {
    std::env::var("GCE_METADATA_HOST")
        .ok()
        .filter(|h| !h.is_empty())
        .map(|h| if h.contains(':') { h } else { format!("{h}:80") })
        .unwrap_or_else(|| DEFAULT_HOST.to_owned())
}

/// GET `/computeMetadata/v1/<path>`; None when unreachable or not 200.
pub async fn get(host: &str, path: &str) -> Option<String> {
    let fut = async {
        let mut s = TcpStream::connect(host).await.ok()?;
        let req = format!(
            "GET /computeMetadata/v1/{path} HTTP/1.0\r\nHost: {host}\r\nMetadata-Flavor: Google\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.ok()?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.ok()?;
        let text = String::from_utf8(buf).ok()?;
        let (head, body) = text.split_once("\r\n\r\n")?;
        let ok = head
            .lines()
            .next()
            .is_some_and(|l| l.split_whitespace().nth(1) == Some("200"));
        ok.then(|| body.trim().to_owned())
    };
    tokio::time::timeout(Duration::from_secs(3), fut)
        .await
        .ok()
        .flatten()
}

/// Project ID and zone name (the metadata server reports `projects/N/zones/Z`).
pub async fn discover() -> (Option<String>, Option<String>) {
    let h = host();
    let project = get(&h, "project/project-id").await;
    let zone = get(&h, "instance/zone")
        .await
        .map(|z| z.rsplit('/').next().unwrap_or(&z).to_owned());
    (project, zone)
}
