//! Python tools and clients from PyPI for tests (the manifests' schema validator, the official GCE
//! client), each in a venv cached under the target directory: only the first run downloads, and
//! nothing is installed into the machine's Python.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{ClusterError, siblings};

/// The venv `<target>/<name>` with `package` installed by pip; `ready(dir)` says whether an existing
/// venv already has it (then nothing runs). None when `python3 -m venv` is not available (the
/// caller skips or fails by its own rule); an error when pip fails or the package is still not
/// ready after installing it.
pub fn venv(
    name: &str,
    package: &str,
    ready: impl Fn(&Path) -> bool,
) -> Result<Option<PathBuf>, ClusterError> {
    let target = siblings::profile_dir()?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let dir = target.join(name);
    if ready(&dir) {
        return Ok(Some(dir));
    }
    let created = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&dir)
        .status()
        .is_ok_and(|s| s.success());
    if !created {
        return Ok(None);
    }
    ClusterError::run_ok(
        Command::new(dir.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            package,
        ]),
        format!("pip install {package} into {}", dir.display()),
    )?;
    if !ready(&dir) {
        return Err(ClusterError::Api(format!(
            "{package} is not usable from {} after installing it",
            dir.display()
        )));
    }
    Ok(Some(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_venv_is_taken_as_it_is_under_the_target_dir() {
        let dir = venv("svcnet-python-test-venv", "nothing", |_| true)
            .expect("venv")
            .expect("ready");
        let target = siblings::profile_dir().expect("profile dir");
        assert_eq!(
            Some(dir.as_path()),
            target
                .parent()
                .map(|t| t.join("svcnet-python-test-venv"))
                .as_deref()
        );
        assert!(!dir.exists(), "nothing was created for a ready venv");
    }
}
