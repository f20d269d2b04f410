#![forbid(unsafe_code)]

fn main() -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}
