//! The kubeconfig clients use: one cluster at `http://ADDR`, no credentials.

use std::net::SocketAddr;
use std::path::Path;

pub fn render(addr: SocketAddr) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: svcnet-apiserver
  cluster:
    server: http://{addr}
users:
- name: svcnet-apiserver
  user: {{}}
contexts:
- name: svcnet-apiserver
  context:
    cluster: svcnet-apiserver
    user: svcnet-apiserver
    namespace: default
current-context: svcnet-apiserver
preferences: {{}}
"
    )
}

/// Written to a temp file then renamed, so a reader never sees half a file.
pub fn write(path: &Path, addr: SocketAddr) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, render(addr))?;
    std::fs::rename(tmp, path)
}
