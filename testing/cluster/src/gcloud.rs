//! The real gcloud CLI pointed at a fake GCE (see DESIGN.md, "Real clients against the fake GCE"):
//! the compute endpoint override, an access-token file, no prompts, no metadata-server probe and no
//! update check, with a config directory of its own so the user's gcloud setup is neither read nor
//! changed.

use std::path::Path;
use std::process::Command;

use crate::ClusterError;

/// `gcloud` for project `project` against the fake GCE on `127.0.0.1:port`; its config and token
/// file live in `dir` (a test's temp dir).
pub fn command(dir: &Path, port: u16, project: &str) -> Result<Command, ClusterError> {
    let config = dir.join("gcloud-config");
    std::fs::create_dir_all(&config).map_err(ClusterError::io(format!("creating {}", config.display())))?;
    let token = dir.join("gcloud-token");
    std::fs::write(&token, "svcnet-fake-token\n")
        .map_err(ClusterError::io(format!("writing {}", token.display())))?;
    let mut cmd = Command::new("gcloud");
    cmd.env("CLOUDSDK_CONFIG", &config)
        .env("CLOUDSDK_CORE_PROJECT", project)
        .env(
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE",
            format!("http://127.0.0.1:{port}/compute/v1/"),
        )
        .env("CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", &token)
        .env("CLOUDSDK_CORE_DISABLE_PROMPTS", "1")
        .env("CLOUDSDK_CORE_CHECK_GCE_METADATA", "false")
        .env("CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK", "1");
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_points_at_the_fake_and_keeps_its_files_in_dir() {
        let dir = std::env::temp_dir().join(format!("svcnet-gcloud-test-{}", std::process::id()));
        let cmd = command(&dir, 8123, "p1").expect("command");
        let env: Vec<(String, String)> = cmd
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
            .collect();
        let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        assert_eq!(
            get("CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE"),
            Some("http://127.0.0.1:8123/compute/v1/")
        );
        assert_eq!(get("CLOUDSDK_CORE_PROJECT"), Some("p1"));
        let token = get("CLOUDSDK_AUTH_ACCESS_TOKEN_FILE").expect("token file");
        assert!(token.starts_with(dir.to_str().expect("utf-8")), "{token}");
        assert_eq!(
            std::fs::read_to_string(token).expect("token"),
            "svcnet-fake-token\n"
        );
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
