//! svcnet-proxy binary: see `svcnet_proxy::cli`.
#![forbid(unsafe_code)]

fn main() -> anyhow::Result<()> {
    svcnet_proxy::cli::main()
}
