//! Command line and the fixed configuration of one fake project.
use anyhow::Context;
use clap::Parser;
use ipnet::Ipv4Net;

#[derive(Parser, Debug)]
#[command(name = "svcnet-fake-gce", about = "Compute Engine API fake (test double)")]
pub struct Cli {
    /// Address to listen on; port 0 picks a free port (printed as `listening on ADDR`).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: String,
    /// The only project this fake serves.
    #[arg(long, default_value = "svcnet-test")]
    pub project: String,
    /// The only region this fake serves.
    #[arg(long, default_value = "us-central1")]
    pub region: String,
    /// Comma-separated zones (each inside --region).
    #[arg(long, value_delimiter = ',', default_value = "us-central1-b")]
    pub zones: Vec<String>,
    /// Pool for ephemeral and reserved external IPs.
    #[arg(long, default_value = "203.0.113.0/24")]
    pub external_range: Ipv4Net,
    /// Pool for instance network IPs and internal addresses.
    #[arg(long, default_value = "10.128.0.0/20")]
    pub internal_range: Ipv4Net,
    /// How long an operation stays PENDING/RUNNING before it is DONE.
    #[arg(long, default_value_t = 0)]
    pub op_latency_ms: u64,
    /// Load state from this file at start (if present) and save it after every mutation.
    #[arg(long)]
    pub state_file: Option<std::path::PathBuf>,
    /// Prefix of every selfLink; default http://<bound address>/compute/v1/.
    #[arg(long)]
    pub base_url: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub listen: String,
    pub project: String,
    pub region: String,
    pub zones: Vec<String>,
    pub external_range: Ipv4Net,
    pub internal_range: Ipv4Net,
    pub op_latency_ms: u64,
    pub state_file: Option<std::path::PathBuf>,
    pub base_url: Option<String>,
}

impl Cli {
    pub fn into_config(self) -> anyhow::Result<Config> {
        let zones: Vec<String> = self
            .zones
            .into_iter()
            .map(|z| z.trim().to_string())
            .filter(|z| !z.is_empty())
            .collect();
        anyhow::ensure!(!zones.is_empty(), "--zones must name at least one zone");
        for z in &zones {
            anyhow::ensure!(
                z.starts_with(&format!("{}-", self.region)),
                "zone {z} is not inside region {}",
                self.region
            );
        }
        if let Some(b) = &self.base_url {
            url_must_end_with_slash(b).context("--base-url")?;
        }
        Ok(Config {
            listen: self.listen,
            project: self.project,
            region: self.region,
            zones,
            external_range: self.external_range,
            internal_range: self.internal_range,
            op_latency_ms: self.op_latency_ms,
            state_file: self.state_file,
            base_url: self.base_url,
        })
    }
}

fn url_must_end_with_slash(b: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        b.starts_with("http://") || b.starts_with("https://"),
        "must start with http:// or https://"
    );
    anyhow::ensure!(
        b.ends_with('/'),
        "must end with '/' (e.g. http://host:port/compute/v1/)"
    );
    Ok(())
}
