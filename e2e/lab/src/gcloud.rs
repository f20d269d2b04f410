//! The real gcloud pointed at the lab's fake GCE, run in the `vpc` namespace (where the fake listens):
//! `svcnet-lab gcloud ARGS` for an operator (and the e2e's operator-made load balancers), and the
//! demo's walkthrough. Its configuration lives under `<dir>/gcloud`, never the user's own.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::gce;
use crate::state::{self, PROJECT};

/// gcloud's environment for the lab: its own config directory, the lab's project, the Compute API
/// at the fake, a fixed token (the fake accepts any), no prompts and no metadata server lookups.
pub fn env(dir: &Path) -> Result<Vec<(String, String)>> {
    let gdir = dir.join("gcloud");
    std::fs::create_dir_all(&gdir)?;
    let token = dir.join("gcloud-token");
    std::fs::write(&token, "lab-token")?;
    Ok([
        ("CLOUDSDK_CONFIG", gdir.display().to_string()),
        ("CLOUDSDK_CORE_PROJECT", PROJECT.to_string()),
        (
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE",
            gce::url("/compute/v1/"),
        ),
        ("CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", token.display().to_string()),
        ("CLOUDSDK_CORE_DISABLE_PROMPTS", "1".to_string()),
        ("CLOUDSDK_CORE_CHECK_GCE_METADATA", "false".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect())
}

/// `svcnet-lab gcloud ARGS`: gcloud's output passed through; fails as gcloud fails.
pub fn main(dir: &Path, args: &[String]) -> Result<()> {
    let st = state::load(dir)?;
    let mut argv = vec!["gcloud"];
    argv.extend(args.iter().map(String::as_str));
    let status = svcnet_netns::command(&st.vpc(), &argv)
        .envs(env(dir)?)
        .status()
        .context("run gcloud in the vpc namespace")?;
    if !status.success() {
        bail!("gcloud {}: {status}", args.join(" "));
    }
    Ok(())
}
