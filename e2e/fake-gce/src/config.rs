//! Command line and the fixed configuration of one fake project.
use clap::Parser;
use ipnet::{Ipv4Net, Ipv6Net};

use crate::Error;

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
    /// Pool of the /64 prefixes of subnetworks with ipv6AccessType EXTERNAL.
    #[arg(long, default_value = "2001:db8:4000::/48")]
    pub external_ipv6_range: Ipv6Net,
    /// Pool of the /64 prefixes of subnetworks with ipv6AccessType INTERNAL (GCE's ULA space).
    #[arg(long, default_value = "fd20:0:1::/48")]
    pub internal_ipv6_range: Ipv6Net,
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

/// Everything a fake project is started with (see `Config::new` for test defaults).
#[derive(Clone, Debug)]
pub struct Config {
    pub listen: String,
    pub project: String,
    pub region: String,
    pub zones: Vec<String>,
    pub external_range: Ipv4Net,
    pub internal_range: Ipv4Net,
    pub external_ipv6_range: Ipv6Net,
    pub internal_ipv6_range: Ipv6Net,
    pub op_latency_ms: u64,
    pub state_file: Option<std::path::PathBuf>,
    pub base_url: Option<String>,
}

impl Config {
    /// A project on 127.0.0.1:0 with the default address pools and no latency.
    pub fn new(project: &str, region: &str, zones: &[&str]) -> Config {
        Config {
            listen: "127.0.0.1:0".into(),
            project: project.into(),
            region: region.into(),
            zones: zones.iter().map(|z| (*z).to_string()).collect(),
            external_range: Ipv4Net::new(std::net::Ipv4Addr::new(203, 0, 113, 0), 24).unwrap_or_default(),
            internal_range: Ipv4Net::new(std::net::Ipv4Addr::new(10, 128, 0, 0), 20).unwrap_or_default(),
            external_ipv6_range: Ipv6Net::new(
                std::net::Ipv6Addr::new(0x2001, 0xdb8, 0x4000, 0, 0, 0, 0, 0),
                48,
            )
            .unwrap_or_default(),
            internal_ipv6_range: Ipv6Net::new(std::net::Ipv6Addr::new(0xfd20, 0, 1, 0, 0, 0, 0, 0), 48)
                .unwrap_or_default(),
            op_latency_ms: 0,
            state_file: None,
            base_url: None,
        }
    }

    /// Checks what clap cannot: zones inside the region, base URL shape.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        if self.zones.is_empty() {
            return bad("--zones must name at least one zone".into());
        }
        for z in &self.zones {
            if !z.starts_with(&format!("{}-", self.region)) {
                return bad(format!("zone {z} is not inside region {}", self.region));
            }
        }
        for (flag, net) in [
            ("--external-ipv6-range", self.external_ipv6_range),
            ("--internal-ipv6-range", self.internal_ipv6_range),
        ] {
            if net.prefix_len() > 64 {
                return bad(format!(
                    "{flag} {net}: must be /64 or shorter (subnetworks get /64s)"
                ));
            }
        }
        if let Some(b) = &self.base_url
            && (!(b.starts_with("http://") || b.starts_with("https://")) || !b.ends_with('/'))
        {
            return bad(format!(
                "--base-url {b}: must be http(s)://... ending with '/' (e.g. http://host:port/compute/v1/)"
            ));
        }
        Ok(())
    }
}

impl Cli {
    pub fn into_config(self) -> Result<Config, Error> {
        let cfg = Config {
            listen: self.listen,
            project: self.project,
            region: self.region,
            zones: self
                .zones
                .into_iter()
                .map(|z| z.trim().to_string())
                .filter(|z| !z.is_empty())
                .collect(),
            external_range: self.external_range,
            internal_range: self.internal_range,
            external_ipv6_range: self.external_ipv6_range,
            internal_ipv6_range: self.internal_ipv6_range,
            op_latency_ms: self.op_latency_ms,
            state_file: self.state_file,
            base_url: self.base_url,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}
