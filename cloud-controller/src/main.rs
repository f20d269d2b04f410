//! svcnet-cloud-controller: GCE load balancers, routes and node initialisation for Kubernetes.
//! Everything lives in the library (`svcnet_cloud_controller::run`); this only parses flags.
#![forbid(unsafe_code)]

use clap::Parser;
use svcnet_cloud_controller::cli::Cli;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    svcnet_core::logging::init(&cli.log)?;
    svcnet_cloud_controller::run::run(cli).await
}
