//! Upstream kube-proxy (the pinned build of the control plane's release) as the lab component
//! `kube-proxy-<node>`, for the takeover step: an operator replacing kube-proxy by svcnet-proxy on a live
//! node, and back. It is deployed as kubeadm deploys it: ServiceAccount `kube-system/kube-proxy` bound to
//! the built-in `system:node-proxier`, `--hostname-override` from the node name as in the DaemonSet, and
//! the very KubeProxyConfiguration file the node's svcnet-proxy reads, only its kubeconfig swapped for
//! kube-proxy's own. Like every lab process it runs inside the node's namespace.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::state::{self, State};
use crate::{components, kube, procs};

/// kubeadm's identity for kube-proxy.
const RBAC: &str = "apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-proxy
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kubeadm:node-proxier
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:node-proxier
subjects:
  - kind: ServiceAccount
    name: kube-proxy
    namespace: kube-system
";

/// `svcnet-lab kube-proxy NODE`: starts upstream kube-proxy on the node (its svcnet-proxy must be stopped:
/// both serve the node's health and metrics ports) and waits for its first sync.
pub fn start(dir: &Path, node: &str) -> Result<()> {
    let mut st = state::load(dir)?;
    let Some(ns) = st.nodes.iter().find(|n| n.name == node).map(|n| n.ns.clone()) else {
        bail!("no node {node}");
    };
    let name = format!("kube-proxy-{node}");
    if let Some(p) = st.procs.get(&name).filter(|p| procs::alive(p.pid)) {
        bail!("{name} is running (pid {})", p.pid);
    }
    if let Some(p) = st
        .procs
        .get(&format!("proxy-{node}"))
        .filter(|p| procs::alive(p.pid))
    {
        bail!(
            "svcnet-proxy runs on {node} (pid {}): stop proxy-{node} first",
            p.pid
        );
    }
    let config = write_config(dir, &st, node)?;
    let bin = svcnet_testcluster::binaries()?.kube_proxy();
    let args = vec![
        format!("--config={}", config.display()),
        format!("--hostname-override={node}"),
        // "SyncProxyRules complete" (the readiness the lab waits for) is logged at level 2.
        "--v=2".to_owned(),
    ];
    let started = components::launch(dir, &mut st, &name, &ns, bin, args)?;
    started.wait(dir, Duration::from_secs(60))?;
    println!("{name} started (pid {})", started.pid);
    Ok(())
}

/// kube-proxy's files under `<dir>/config/kube-proxy/`: its kubeconfig (a token of its ServiceAccount)
/// and the node's svcnet-proxy config file naming that kubeconfig instead. Returns the config's path.
fn write_config(dir: &Path, st: &State, node: &str) -> Result<PathBuf> {
    let out = dir.join("config").join("kube-proxy");
    std::fs::create_dir_all(&out)?;
    let rbac = out.join("rbac.yaml");
    std::fs::write(&rbac, RBAC)?;
    let rbac_arg = rbac.to_string_lossy().into_owned();
    kube::kubectl_ok(dir, st, &["apply", "-f", &rbac_arg])?;
    let token = kube::kubectl_ok(
        dir,
        st,
        &[
            "create",
            "token",
            "kube-proxy",
            "-n",
            "kube-system",
            "--duration=24h",
        ],
    )?;
    let kubeconfig = out.join("kubeconfig.conf");
    std::fs::write(&kubeconfig, with_token(&st.proxy_kubeconfig, token.trim())?)?;
    let svcnet = svcnet_config(st, node)?;
    let text = std::fs::read_to_string(&svcnet).with_context(|| format!("read {}", svcnet.display()))?;
    let config = out.join(format!("config-{node}.conf"));
    std::fs::write(&config, swap_kubeconfig(&text, &kubeconfig)?)?;
    Ok(config)
}

/// The svcnet-proxy kubeconfig (as the lab writes them) authenticating as kube-proxy with `token`.
fn with_token(svcnet_kubeconfig: &Path, token: &str) -> Result<String> {
    let text = std::fs::read_to_string(svcnet_kubeconfig)
        .with_context(|| format!("read {}", svcnet_kubeconfig.display()))?;
    Ok(svcnet_testcluster::kubeconfig::with_token(
        &text,
        "system:serviceaccount:kube-system:kube-proxy",
        token,
    )?)
}

/// The file the node's svcnet-proxy was started with (`--config=PATH` or `--config PATH`).
fn svcnet_config(st: &State, node: &str) -> Result<PathBuf> {
    let Some(p) = st.procs.get(&format!("proxy-{node}")) else {
        bail!("node {node} has no svcnet-proxy to take the config from");
    };
    let mut args = p.args.iter();
    while let Some(a) = args.next() {
        if let Some(path) = a.strip_prefix("--config=") {
            return Ok(PathBuf::from(path));
        }
        if a == "--config"
            && let Some(path) = args.next()
        {
            return Ok(PathBuf::from(path));
        }
    }
    bail!("proxy-{node} runs without --config")
}

/// `text` with its `clientConnection.kubeconfig` line naming `kubeconfig`.
pub fn swap_kubeconfig(text: &str, kubeconfig: &Path) -> Result<String> {
    let mut swapped = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|l| match l.split_once("kubeconfig:") {
            Some((indent, _)) if indent.trim().is_empty() && !indent.is_empty() => {
                swapped += 1;
                format!("{indent}kubeconfig: {}", kubeconfig.display())
            }
            _ => l.to_owned(),
        })
        .collect();
    if swapped != 1 {
        bail!("expected one indented `kubeconfig:` line in the proxy's config, found {swapped}");
    }
    Ok(lines.join("\n") + "\n")
}

#[cfg(test)]
mod tests;
