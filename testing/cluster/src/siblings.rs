//! Binaries of other workspace packages, for tests and test tools that run them: Cargo builds only
//! the package under test's own binaries for its tests, so the others are built here, with the same
//! profile into the same target directory as the running executable.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::ClusterError;

/// `<target>/<profile>` of the running executable, which is `<target>/<profile>/<binary>` or, for a
/// test, `<target>/<profile>/deps/<test>`.
pub fn profile_dir() -> Result<PathBuf, ClusterError> {
    let exe = std::env::current_exe().map_err(ClusterError::io("locating the running executable"))?;
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    Ok(dir)
}

/// Builds `packages` (`cargo build -p ..`) into [`profile_dir`] and returns that directory, where
/// their binaries then are.
pub fn build(packages: &[&str]) -> Result<PathBuf, ClusterError> {
    let dir = profile_dir()?;
    // The Cargo that runs this test; env! only for a binary started by hand.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from(env!("CARGO")));
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-q"]);
    for p in packages {
        cmd.args(["-p", p]);
    }
    if let Some(target) = dir.parent() {
        cmd.arg("--target-dir").arg(target);
    }
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    // Under cargo test this process has the variables of the crate under test (CARGO_MANIFEST_DIR,
    // ...); build scripts that watch them (ring's does) would see a change and rebuild the TLS stack
    // and everything above it here, and again in the next plain cargo build.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if is_crate_variable(&key) {
            cmd.env_remove(key.as_ref());
        }
    }
    let what = format!("cargo build -p {}", packages.join(" -p "));
    ClusterError::run_ok(
        cmd.current_dir(env!("CARGO_MANIFEST_DIR")).stdin(Stdio::null()),
        what,
    )?;
    Ok(dir)
}

/// The variables Cargo sets for the crate it builds or runs (not those of the build as a whole, such
/// as CARGO_HOME or CARGO_TARGET_DIR).
fn is_crate_variable(key: &str) -> bool {
    [
        "CARGO_MANIFEST_",
        "CARGO_PKG_",
        "CARGO_CRATE_",
        "CARGO_BIN_",
        "CARGO_PRIMARY_",
        "CARGO_TARGET_TMPDIR",
    ]
    .iter()
    .any(|p| key.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_lives_in_deps_below_its_profile_dir() {
        let dir = profile_dir().expect("profile dir");
        let exe = std::env::current_exe().expect("exe");
        assert_eq!(exe.parent().and_then(Path::parent), Some(dir.as_path()));
    }

    #[test]
    fn only_the_crate_variables_are_dropped() {
        assert!(is_crate_variable("CARGO_MANIFEST_DIR"));
        assert!(is_crate_variable("CARGO_PKG_NAME"));
        assert!(is_crate_variable("CARGO_TARGET_TMPDIR"));
        assert!(!is_crate_variable("CARGO_TARGET_DIR"));
        assert!(!is_crate_variable("CARGO_HOME"));
    }
}
