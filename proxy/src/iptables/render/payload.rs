//! A complete render as iptables-restore payloads: the whole ruleset, or only what differs from the
//! digests of the last sync (the daemon's [`super::Renderer`] builds its payloads port by port instead).

use std::collections::BTreeSet;

use super::Rendered;
use super::batch::{ChainChanges, PayloadStats, Payloads, UNBATCHED, batch};
use super::diff::{ChainDigests, since_digests};
use super::jumps::jumps;
use crate::config::RenderConfig;

/// Options for a full payload.
#[derive(Clone, Debug, Default)]
pub struct FullOptions {
    /// Also write the jump rules from built-in chains (for a fresh namespace, `render` and `trace`).
    pub jumps: bool,
    /// Declare KUBE-PROXY-CANARY in mangle, nat and filter.
    pub canaries: bool,
    /// Existing svcnet-owned nat chains (from iptables-save) that are no longer rendered: deleted.
    pub stale_nat: BTreeSet<String>,
}

impl Rendered {
    /// The whole ruleset as one iptables-restore --noflush payload.
    pub fn payload(&self, opts: &FullOptions, cfg: &RenderConfig) -> (String, PayloadStats) {
        let p = self.full_payloads(opts, cfg, UNBATCHED);
        (p.joined(), p.stats)
    }

    /// The whole ruleset, in batches of about `max_chains` service chains (see [`Payloads`]).
    pub fn full_payloads(&self, opts: &FullOptions, cfg: &RenderConfig, max_chains: usize) -> Payloads {
        let jumps = if opts.jumps { jumps(cfg) } else { Vec::new() };
        let changes = ChainChanges {
            filter: self.filter.iter().map(AsRef::as_ref).collect(),
            filter_deletes: vec![],
            nat_shared: self.shared_nat().iter().map(AsRef::as_ref).collect(),
            nat_owned: self
                .services
                .values()
                .map(|s| s.chains.iter().map(AsRef::as_ref).collect())
                .collect(),
            nat_deletes: opts.stale_nat.iter().map(String::as_str).collect(),
        };
        batch(changes, &jumps, opts.canaries, true, max_chains)
    }

    /// Only the chains that differ from `prev`, plus flush+delete of chains `prev` had and this does
    /// not. `None` when nothing changed (no restore call needed).
    pub fn partial_payload(&self, prev: &ChainDigests) -> Option<(String, PayloadStats)> {
        self.partial_payloads(prev, UNBATCHED)
            .map(|p| (p.joined(), p.stats))
    }

    /// [`Rendered::partial_payload`] in batches of about `max_chains` service chains.
    pub fn partial_payloads(&self, prev: &ChainDigests, max_chains: usize) -> Option<Payloads> {
        let changes = since_digests(self, prev);
        (!changes.is_empty()).then(|| batch(changes, &[], false, false, max_chains))
    }
}

#[cfg(test)]
mod tests;
