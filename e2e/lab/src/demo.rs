//! `make demo`: the GKE Service walkthrough replayed on the lab.

use std::path::Path;

use anyhow::Result;

pub fn run(dir: &Path, nodes: u32, keep: bool) -> Result<()> {
    crate::cluster::up(dir, nodes)?;
    if !keep {
        crate::cluster::down(dir)?;
    }
    Ok(())
}
