//! svcnet-proxy binary: see `svcnet_proxy::cli`.
#![forbid(unsafe_code)]

/// jemalloc, configured in .cargo/config.toml to return freed pages at once: a node's proxy keeps
/// ~40 MiB of live heap at 10k Services / 100k endpoints, and with glibc malloc another ~35 MiB of
/// freed list pages and restore batches stayed resident (linkerd2-proxy makes the same choice).
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<()> {
    svcnet_proxy::cli::main()
}
