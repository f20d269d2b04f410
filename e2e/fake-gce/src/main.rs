//! svcnet-fake-gce binary: parse flags, serve until Ctrl-C/SIGTERM.
#![forbid(unsafe_code)]

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cfg = svcnet_fake_gce::config::Cli::parse().into_config()?;
    svcnet_fake_gce::run(cfg).await?;
    Ok(())
}
