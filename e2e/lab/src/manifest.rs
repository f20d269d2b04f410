//! The command lines of svcnet-proxy and svcnet-cloud-controller come from `manifests/overlays/lab`
//! (rendered with `kubectl kustomize`), so the lab runs what `kubectl apply -k` would deploy. The mapping
//! from a pod spec to a process is small and explicit:
//!
//! | pod spec | in the lab |
//! |---|---|
//! | `containers[0].command` + `args` | the argv; `command[0]`'s file name picks the sibling binary |
//! | `env` from `fieldRef` (`spec.nodeName`, `metadata.name`) and `value` | substituted into `$(VAR)` |
//! | `volumeMounts` of a `configMap` volume | the ConfigMap's files written under `<lab dir>/config/<workload>/<volume>/`; the mount path is replaced by that directory in the argv and inside the files (the proxy's config.conf names its kubeconfig by mount path) |
//! | `hostPath` volumes (`/run/xtables.lock`, `/lib/modules`) | nothing: lab processes see the machine's own |
//! | `hostNetwork: true` | the process runs in the node's namespace (proxy) or the `vpc` namespace (controller) |
//! | `replicas`, probes, resources, securityContext, tolerations, affinity | not applied (README.md says why) |
//!
//! Pure: rendered documents in, argv and files out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

pub const PROXY: (&str, &str) = ("DaemonSet", "svcnet-proxy");
pub const CONTROLLER: (&str, &str) = ("Deployment", "svcnet-cloud-controller");

/// A process to start: the binary's file name (a sibling of svcnet-lab), its arguments, and the
/// ConfigMap files it reads (path, content).
#[derive(Debug, PartialEq)]
pub struct Launch {
    pub bin: String,
    pub args: Vec<String>,
    pub files: Vec<(PathBuf, String)>,
}

/// `kubectl kustomize <overlay>` parsed into documents.
pub fn render(overlay: &Path) -> Result<Vec<Value>> {
    let out = std::process::Command::new(svcnet_testcluster::kubectl_program())
        .arg("kustomize")
        .arg(overlay)
        .output()
        .context("run `kubectl kustomize` (kubectl is needed to read manifests/overlays/lab)")?;
    if !out.status.success() {
        bail!(
            "kubectl kustomize {}: {}",
            overlay.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    parse(&String::from_utf8_lossy(&out.stdout))
}

/// Multi-document YAML into JSON values.
pub fn parse(yaml: &str) -> Result<Vec<Value>> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).context("manifest YAML")?;
    Ok(docs.into_iter().filter(|v| !v.is_null()).collect())
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> Result<&'a Value> {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .ok_or_else(|| anyhow!("{kind} {name} not in the rendered overlay"))
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// Kubernetes' `$(VAR)` expansion (unknown names stay as written, as the kubelet leaves them).
fn expand(arg: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = arg.to_owned();
    for (k, v) in env {
        out = out.replace(&format!("$({k})"), v);
    }
    out
}

/// The launch of workload (`kind`, `name`) with its ConfigMaps under `conf_root`; `fields` gives the
/// downward-API values (`spec.nodeName`, `metadata.name`).
pub fn launch(
    docs: &[Value],
    (kind, name): (&str, &str),
    conf_root: &Path,
    fields: &BTreeMap<&str, String>,
) -> Result<Launch> {
    let workload = find(docs, kind, name)?;
    let pod = &workload["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let mut argv = strs(&c["command"]);
    argv.extend(strs(&c["args"]));
    if argv.is_empty() {
        bail!("{kind} {name}: container has no command");
    }
    let mut env = BTreeMap::new();
    for e in c["env"].as_array().into_iter().flatten() {
        let key = e["name"].as_str().unwrap_or_default().to_owned();
        let value = if let Some(v) = e["value"].as_str() {
            v.to_owned()
        } else if let Some(path) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            fields
                .get(path)
                .cloned()
                .ok_or_else(|| anyhow!("{kind} {name}: env {key} from {path}: no lab value"))?
        } else {
            bail!("{kind} {name}: env {key}: only value and fieldRef are mapped");
        };
        env.insert(key, value);
    }
    // Mount path -> local directory, and the files to write there.
    let mut mounts: Vec<(String, PathBuf)> = Vec::new();
    let mut files = Vec::new();
    for m in c["volumeMounts"].as_array().into_iter().flatten() {
        let vol_name = m["name"].as_str().unwrap_or_default();
        let mount = m["mountPath"].as_str().unwrap_or_default();
        let vol = pod["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"] == vol_name)
            .ok_or_else(|| anyhow!("{kind} {name}: volume {vol_name} missing"))?;
        let Some(cm_name) = vol["configMap"]["name"].as_str() else {
            continue; // hostPath: the machine's own path
        };
        let cm = find(docs, "ConfigMap", cm_name)?;
        let local = conf_root.join(name).join(vol_name);
        for (key, content) in cm["data"].as_object().into_iter().flatten() {
            files.push((local.join(key), content.as_str().unwrap_or_default().to_owned()));
        }
        mounts.push((mount.trim_end_matches('/').to_owned(), local));
    }
    let remount = |s: &str| {
        let mut out = s.to_owned();
        for (mount, local) in &mounts {
            out = out.replace(&format!("{mount}/"), &format!("{}/", local.display()));
        }
        out
    };
    for (_, content) in &mut files {
        *content = remount(content);
    }
    let bin = Path::new(&argv[0])
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let args = argv[1..].iter().map(|a| remount(&expand(a, &env))).collect();
    Ok(Launch { bin, args, files })
}

#[cfg(test)]
mod tests;
