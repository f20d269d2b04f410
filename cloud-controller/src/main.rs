//! svcnet-cloud-controller: not built yet (see the cloud-controller issue).
#![forbid(unsafe_code)]

fn main() -> anyhow::Result<()> {
    anyhow::bail!("svcnet-cloud-controller is not implemented yet; see README.md for the roadmap")
}
