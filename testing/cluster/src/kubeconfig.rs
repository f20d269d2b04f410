//! Kubeconfig files: one cluster, one user, one context, credentials embedded so a file can be copied
//! (into a lab namespace, a test's temp dir) without the PEM files beside it.

use std::path::Path;

use data_encoding::BASE64;
use serde_json::json;

use crate::ClusterError;

/// How a kubeconfig's user authenticates.
pub enum Credentials<'a> {
    /// A client certificate and key (PEM).
    Cert { cert_pem: &'a str, key_pem: &'a str },
    /// A bearer token (a ServiceAccount token from the TokenRequest API).
    Token(&'a str),
}

/// The kubeconfig text (JSON is YAML, and kubectl and kube-rs read both).
pub fn render(server: &str, ca_pem: &str, user: &str, creds: &Credentials<'_>) -> String {
    let user_body = match creds {
        Credentials::Cert { cert_pem, key_pem } => json!({
            "client-certificate-data": BASE64.encode(cert_pem.as_bytes()),
            "client-key-data": BASE64.encode(key_pem.as_bytes()),
        }),
        Credentials::Token(token) => json!({ "token": token }),
    };
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "svcnet-test",
            "cluster": {
                "server": server,
                "certificate-authority-data": BASE64.encode(ca_pem.as_bytes()),
            },
        }],
        "users": [{ "name": user, "user": user_body }],
        "contexts": [{
            "name": "svcnet-test",
            "context": { "cluster": "svcnet-test", "user": user, "namespace": "default" },
        }],
        "current-context": "svcnet-test",
    });
    format!("{doc:#}\n")
}

/// Writes [`render`]'s text to `path`.
pub fn write(
    path: &Path,
    server: &str,
    ca_pem: &str,
    user: &str,
    creds: &Credentials<'_>,
) -> Result<(), ClusterError> {
    std::fs::write(path, render(server, ca_pem, user, creds))
        .map_err(ClusterError::io(format!("writing {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_kubeconfig_names_server_and_token() {
        let text = render(
            "https://127.1.2.3:6443",
            "CA",
            "svcnet-proxy",
            &Credentials::Token("t0k"),
        );
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["clusters"][0]["cluster"]["server"], "https://127.1.2.3:6443");
        assert_eq!(v["users"][0]["user"]["token"], "t0k");
        assert_eq!(v["contexts"][0]["context"]["user"], "svcnet-proxy");
        assert_eq!(
            v["clusters"][0]["cluster"]["certificate-authority-data"],
            BASE64.encode(b"CA")
        );
    }
}
