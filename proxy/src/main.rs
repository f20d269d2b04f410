//! svcnet-proxy binary: flags in `svcnet_proxy::cli`, checked into `settings`; the agent in `daemon`,
//! the offline commands in `offline`.
#![forbid(unsafe_code)]

use clap::Parser;
use svcnet_proxy::cli::{Cli, Command};
use svcnet_proxy::settings::RunSettings;
use svcnet_proxy::{cleanup, daemon, offline};

/// jemalloc, configured in .cargo/config.toml to return freed pages at once: with glibc malloc the
/// freed list pages and restore batches stayed resident beside the live heap (docs/BENCHMARKS.md,
/// "P4: proxy memory (10k services / 100k endpoints)"; linkerd2-proxy makes the same choice).
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<()> {
    let out = match Cli::parse().command {
        // Bad flags end the process here, before anything on the node is touched.
        Command::Run(a) => return daemon::main(RunSettings::from_args(a)?),
        Command::Cleanup(a) => cleanup::run(&a)?,
        Command::Render(a) => offline::run_render(&a)?,
        Command::Trace(a) => offline::run_trace(&a)?,
        Command::Explain(a) => offline::run_explain(&a)?,
    };
    print!("{out}");
    Ok(())
}
