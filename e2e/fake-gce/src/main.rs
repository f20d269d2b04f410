//! svcnet-fake-gce: a test double, not built yet.
#![forbid(unsafe_code)]

fn main() -> anyhow::Result<()> {
    anyhow::bail!("svcnet-fake-gce is not implemented yet")
}
