//! svcnet-apiserver: a test double, not built yet.
#![forbid(unsafe_code)]

fn main() -> anyhow::Result<()> {
    anyhow::bail!("svcnet-apiserver is not implemented yet")
}
