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

/// The kubeconfig `text` (as [`render`] writes it) for the same server and CA, authenticating as
/// `user` with `token` instead: another identity on a control plane whose PKI this process does not
/// hold (the lab's later commands keep only the files).
pub fn with_token(text: &str, user: &str, token: &str) -> Result<String, ClusterError> {
    let bad = |why: &str| ClusterError::Api(format!("kubeconfig: {why}"));
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let cluster = &doc["clusters"][0]["cluster"];
    let server = cluster["server"]
        .as_str()
        .ok_or_else(|| bad("no clusters[0].cluster.server"))?;
    let ca = cluster["certificate-authority-data"]
        .as_str()
        .and_then(|b| BASE64.decode(b.as_bytes()).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| bad("no base64 PEM in clusters[0].cluster.certificate-authority-data"))?;
    Ok(render(server, &ca, user, &Credentials::Token(token)))
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

    #[test]
    fn with_token_keeps_server_and_ca_and_swaps_the_identity() {
        let admin = render(
            "https://127.1.2.3:6443",
            "CA",
            "admin",
            &Credentials::Cert {
                cert_pem: "C",
                key_pem: "K",
            },
        );
        let text = with_token(&admin, "system:serviceaccount:kube-system:kube-proxy", "t0k").expect("swap");
        assert_eq!(
            text,
            render(
                "https://127.1.2.3:6443",
                "CA",
                "system:serviceaccount:kube-system:kube-proxy",
                &Credentials::Token("t0k")
            )
        );
        assert!(with_token("{}", "u", "t").is_err());
    }
}
