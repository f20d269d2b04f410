//! svcnet-fake-gce: a Compute Engine API test double (see README.md). Not a cloud.
#![forbid(unsafe_code)]

mod admin;
mod api;
mod app;
mod batch;
mod calls;
mod clock;
mod config;
mod crud;
mod errors;
mod faults;
mod filter;
mod lists;
mod metadata;
mod operations;
mod paging;
mod persist;
mod resources;
mod routes;
mod scopes;
mod server;
mod store;
mod urls;
mod validate;

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
    let cli = config::Cli::parse();
    server::run(cli.into_config()?).await
}
