//! A component's ConfigMap files as the lab hands them over: written where its manifest's volume
//! mounts point ([`crate::manifest`]), `kubeconfig.conf` swapped for the component's ServiceAccount
//! kubeconfig as a pod's token mount would give it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The ConfigMap files with `kubeconfig.conf` replaced by the component's ServiceAccount kubeconfig:
/// what a pod gets from its ServiceAccount token mount, so the binary runs under its manifests' RBAC.
pub fn with_identity(files: Vec<(PathBuf, String)>, kubeconfig: &Path) -> Result<Vec<(PathBuf, String)>> {
    let identity =
        std::fs::read_to_string(kubeconfig).with_context(|| format!("read {}", kubeconfig.display()))?;
    Ok(files
        .into_iter()
        .map(|(path, content)| {
            if path.file_name().is_some_and(|f| f == "kubeconfig.conf") {
                (path, identity.clone())
            } else {
                (path, content)
            }
        })
        .collect())
}

/// Writes the ConfigMap files a launch reads.
pub fn write_files(files: &[(PathBuf, String)]) -> Result<()> {
    for (path, content) in files {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, content).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}
