//! `--config FILE`: the `[global]` section of upstream's gce.conf (gcfg/INI), the keys svcnet
//! uses. Flags override the file. Unknown keys are ignored (upstream has many that do not apply).
//!
//! ```ini
//! [global]
//! project-id = my-project
//! network-name = default
//! subnetwork-name = default    ; internal load balancers' subnet
//! node-tags = gke-node
//! node-tags = other-tag        ; repeatable
//! local-zone = us-central1-b   ; gives the region when --region is not set
//! api-endpoint = http://127.0.0.1:8080
//! ```

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GceConf {
    pub project: Option<String>,
    pub network: Option<String>,
    pub subnetwork: Option<String>,
    pub node_tags: Vec<String>,
    pub local_zone: Option<String>,
    pub region: Option<String>,
    pub api_endpoint: Option<String>,
    pub cluster_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}: {message}")]
pub struct ConfError {
    pub path: String,
    pub line: usize,
    pub message: String,
}

pub(crate) fn parse(path: &str, text: &str) -> Result<GceConf, ConfError> {
    let mut conf = GceConf::default();
    let mut in_global = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split([';', '#']).next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(section) = line.strip_prefix('[') {
            in_global = section
                .trim_end_matches(']')
                .trim()
                .eq_ignore_ascii_case("global");
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(ConfError {
                path: path.to_owned(),
                line: i + 1,
                message: format!("expected `key = value`, got {raw:?}"),
            });
        };
        if !in_global {
            continue;
        }
        let value = value.trim().trim_matches('"').to_owned();
        match key.trim().to_ascii_lowercase().as_str() {
            "project-id" => conf.project = Some(value),
            "network-name" => conf.network = Some(value),
            "subnetwork-name" => conf.subnetwork = Some(value),
            "node-tags" => conf.node_tags.extend(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned),
            ),
            "local-zone" => conf.local_zone = Some(value),
            "region" => conf.region = Some(value),
            "api-endpoint" => conf.api_endpoint = Some(value),
            "cluster-name" => conf.cluster_name = Some(value),
            _ => {}
        }
    }
    Ok(conf)
}

#[cfg(test)]
mod tests;
