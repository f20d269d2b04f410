//! One sync of one IP family in the nftables `maps` layout (docs/nftables-maps.md): the table kept
//! per service port in a [`MapsCache`], so a sync renders only the ports whose records changed and
//! writes their element difference. A full sync (the first, after a failure, the hourly one, or a
//! node fact or setting that changed) replaces the whole table in one transaction: `add table`,
//! `delete table`, then the table, so no packet sees it missing. That also takes over a table left
//! by the other layout or by an earlier run without listing its elements (a listing at 10k
//! services costs seconds). Written through `nft -f`: svcnet's netlink encoder does not yet know
//! the layout's concatenated `typeof` sets, `numgen` keys and dynamic map updates.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::kernel::Nft;
use super::render::NoLocal;
use super::render::maps::{MapsCache, MapsChange};
use crate::config::RenderConfig;
use crate::exec::ToolError;
use crate::model::{Endpoints, NodeFacts, ProxyState, ServicePort, ServicePortName};
use crate::sync::debug_path;

/// One port's records as last written: compared by pointer, as the upstream layout's partial sync.
type Records = (Arc<ServicePort>, Option<Endpoints>);

/// What the kernel's maps table was built from.
#[derive(Debug, Default)]
pub(crate) struct MapsSync {
    /// None until a full sync succeeded (and again after any failure).
    cache: Option<Held>,
}

#[derive(Debug)]
struct Held {
    cache: MapsCache,
    node: NodeFacts,
    cfg: RenderConfig,
    ports: BTreeMap<ServicePortName, Records>,
    no_local: no_local::NoLocalPorts,
}

impl MapsSync {
    /// Writes the table for `state`: a replacement when `full` or nothing is held for the same node
    /// and settings, else the element change; returns the bytes written. `debug` (`--write-payloads`):
    /// the directory and sequence number to write the transaction's text under. On failure nothing is
    /// held: the next sync replaces.
    pub(crate) async fn sync(
        &mut self,
        nft: &Nft,
        state: &ProxyState,
        node: NodeFacts,
        cfg: RenderConfig,
        full: bool,
        debug: Option<(&Path, u64)>,
    ) -> Result<usize, ToolError> {
        let held = match self.cache.take() {
            Some(h) if !full && h.node == node && h.cfg == cfg => Some(h),
            _ => None,
        };
        let (mut held, first) = match held {
            Some(h) => (h, false),
            None => (
                Held {
                    cache: MapsCache::new(node.clone(), cfg.clone()),
                    node,
                    cfg,
                    ports: BTreeMap::new(),
                    no_local: no_local::NoLocalPorts::default(),
                },
                true,
            ),
        };
        held.update(state);
        let change = held.cache.take_change(first);
        let text = match &change {
            MapsChange::Replace => change.text(&held.cache.table()),
            MapsChange::Elements { .. } => change.elements_text(held.cfg.family),
        };
        let replaced = change == MapsChange::Replace;
        if let Some((dir, seq)) = debug
            && !text.is_empty()
        {
            let path = debug_path(dir, seq, held.cfg.family, replaced, "nft");
            if let Err(err) = std::fs::write(&path, &text) {
                tracing::warn!(%err, path = %path.display(), "writing debug transaction failed");
            }
        }
        if !text.is_empty() {
            nft.apply(&text).await?;
        }
        self.cache = Some(held);
        tracing::debug!(
            replaced,
            elements = change.len(),
            "nftables maps transaction applied"
        );
        Ok(text.len())
    }

    /// The no-local-endpoints metric's counts for what the last successful sync wrote.
    pub(crate) fn no_local(&self) -> NoLocal {
        self.cache
            .as_ref()
            .map(|h| h.no_local.total())
            .unwrap_or_default()
    }
}

impl Held {
    /// Gives the cache every port whose records are not the very ones it was last given.
    fn update(&mut self, state: &ProxyState) {
        let gone: Vec<ServicePortName> = self
            .ports
            .keys()
            .filter(|name| !state.services.contains_key(*name))
            .cloned()
            .collect();
        for name in gone {
            self.ports.remove(&name);
            self.cache.set_port(&name, None);
            self.no_local.set(&name, None, &self.node);
        }
        for (name, svc) in &state.services {
            let eps = state.endpoints.get(name);
            let same = self.ports.get(name).is_some_and(|(s, e)| {
                Arc::ptr_eq(s, svc)
                    && match (e, eps) {
                        (None, None) => true,
                        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                        _ => false,
                    }
            });
            if same {
                continue;
            }
            let slice = eps.map_or(&[][..], |e| &e[..]);
            self.cache.set_port(name, Some((svc, slice)));
            self.no_local.set(name, Some((svc, slice)), &self.node);
            self.ports.insert(name.clone(), (svc.clone(), eps.cloned()));
        }
    }
}

mod no_local;
