//! One sync of one IP family in the nftables `maps` layout (docs/nftables-maps.md): the table kept
//! per service port in a [`MapsCache`], so a sync renders only the ports whose records changed and
//! writes their element difference. A full sync (the first, after a failure, the hourly one, or a
//! node fact or setting that changed) writes the whole table ([`replace`]): in pieces, hooks last,
//! where no packet reaches the kernel's table yet, else in one transaction that keeps the hooked
//! chains, so no packet sees it missing. That also takes over a table left by the other layout or
//! by an earlier run without listing its elements (a listing at 10k services costs seconds). All go
//! through svcnet's netlink writer on a socket kept across syncs: element steps as typed elements
//! (one batch), a replacement (also when a port needs a dispatch rule the table lacks) as the whole
//! table; `nft -f` takes what the encoder refuses.

use std::path::Path;
use std::sync::Arc;

use super::kernel::{Nft, WriteError, Writer, kernel_error, off_thread};
use super::netlink;
use super::render::NoLocal;
use super::render::maps::{MapsCache, MapsChange};
use super::render::naming::TABLE;
use super::socket::NftSocket;
use crate::config::RenderConfig;
use crate::exec::ToolError;
use crate::model::{Changed, Family, ModelCache, NodeFacts, ProxyState, ServicePortName};
use crate::sync::debug_path;

/// What the kernel's maps table was built from.
#[derive(Debug, Default)]
pub(crate) struct MapsSync {
    /// None until a full sync succeeded (and again after any failure).
    cache: Option<Held>,
    /// The netlink socket of the element steps, kept open across syncs.
    socket: Option<NftSocket>,
}

/// The table as written, and the ports the no-local-endpoints metric counts in it.
#[derive(Debug)]
struct Held {
    cache: MapsCache,
    no_local: no_local::NoLocalPorts,
}

impl MapsSync {
    /// Writes the table for the model's state: a replacement when `full` or nothing is held for the same node
    /// and settings, else the element change (each one netlink batch); returns the writer and
    /// the bytes written. `debug` (`--write-payloads`): the directory and sequence number to write
    /// the transaction's text under. On failure nothing is held: the next sync replaces.
    pub(crate) async fn sync(
        &mut self,
        nft: &Nft,
        model: &ModelCache,
        node: NodeFacts,
        cfg: RenderConfig,
        full: bool,
        debug: Option<(&Path, u64)>,
    ) -> Result<(Writer, usize), ToolError> {
        let held = match self.cache.take() {
            Some(h) if !full && *h.cache.node() == node && *h.cache.cfg() == cfg => Some(h),
            _ => None,
        };
        let (mut held, first) = match held {
            Some(h) => (h, false),
            None => (
                Held {
                    cache: MapsCache::new(node, cfg),
                    no_local: no_local::NoLocalPorts::default(),
                },
                true,
            ),
        };
        let started = std::time::Instant::now();
        held.update(model.state(), if first { &Changed::All } else { model.changed() });
        let update_us = started.elapsed().as_micros() as u64;
        let family = held.cache.cfg().family;
        let change = held.cache.peek_change(first);
        let render_us = started.elapsed().as_micros() as u64 - update_us;
        let replaced = change == MapsChange::Replace;
        if let Some((dir, seq)) = debug {
            let text = match &change {
                MapsChange::Replace => held.cache.replace_text(),
                elements => elements.elements_text(family),
            };
            if !text.is_empty() {
                let path = debug_path(dir, seq, family, replaced, "nft");
                if let Err(err) = std::fs::write(&path, text) {
                    tracing::warn!(%err, path = %path.display(), "writing debug transaction failed");
                }
            }
        }
        let (change, written) = match change {
            MapsChange::Replace => {
                let (socket, back, change, written) =
                    grow::grow_or_replace(nft, self.socket.take(), held, first).await;
                (self.socket, held) = (socket, back);
                (change, written)
            }
            elements => {
                let (socket, change, written) = write_maps(nft, self.socket.take(), elements).await;
                self.socket = socket;
                (change, written)
            }
        };
        let written = written?;
        let write_us = started.elapsed().as_micros() as u64 - update_us - render_us;
        let stale = affinity::stale(&change, &held.cache);
        if !stale.is_empty() {
            let (socket, purged) = purge_affinity(nft, self.socket.take(), stale).await;
            self.socket = socket;
            // The rules are written: a failure here leaves only entries naming gone endpoints,
            // which the next sync (a replacement, after this failure) does not carry over.
            purged?;
        }
        held.cache.commit_change(first, &change);
        self.cache = Some(held);
        tracing::debug!(
            update_us,
            render_us,
            write_us,
            commit_us = started.elapsed().as_micros() as u64 - update_us - render_us - write_us,
            replaced = change == MapsChange::Replace,
            elements = change.len(),
            writer = written.0.label(),
            "nftables maps transaction applied"
        );
        Ok(written)
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
    /// Gives the cache (and the metric's count) every port whose records are not the very ones it
    /// was last given (compared by pointer, as the upstream layout's partial sync), among the ports
    /// the model's last update may have changed: a sync costs the change, not the cluster.
    fn update(&mut self, state: &ProxyState, changed: &Changed) {
        match changed {
            Changed::All => {
                let gone: Vec<ServicePortName> = self
                    .cache
                    .port_names()
                    .filter(|name| !state.services.contains_key(*name))
                    .cloned()
                    .collect();
                for name in &gone {
                    self.set(name, state);
                }
                for name in state.services.keys() {
                    self.set(name, state);
                }
            }
            Changed::Ports(names) => {
                for name in names {
                    self.set(name, state);
                }
            }
        }
    }

    /// Gives the cache port `name` as `state` has it, unless it holds those very records already.
    fn set(&mut self, name: &ServicePortName, state: &ProxyState) {
        let Some(svc) = state.services.get(name) else {
            if self.cache.records(name).is_some() {
                self.cache.set_port(name, None);
            }
            self.no_local.set(name, None, self.cache.node());
            return;
        };
        let eps = state.endpoints.get(name);
        let same = self.cache.records(name).is_some_and(|(s, e)| {
            Arc::ptr_eq(s, svc)
                && match (e, eps) {
                    (None, None) => true,
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    _ => false,
                }
        });
        if !same {
            let slice = eps.map_or(&[][..], |e| &e[..]);
            self.no_local.set(name, Some((svc, slice)), self.cache.node());
            self.cache.set_port(name, Some((svc.clone(), eps.cloned())));
        }
    }
}

mod affinity;
mod grow;
mod no_local;
mod replace;

/// `socket`, or a new one.
fn socket_or_open(socket: Option<NftSocket>, timeout: std::time::Duration) -> Result<NftSocket, WriteError> {
    match socket {
        Some(s) => Ok(s),
        None => NftSocket::open(timeout).map_err(kernel_error),
    }
}

/// The maps layout's element steps as one netlink batch, off the async threads, on `socket`
/// (opened when `None`); steps the encoder refuses go through `nft -f` instead, with a warning.
/// Returns the socket to keep (none after a kernel error), the change, and which writer took it
/// and how many bytes it wrote. The socket is kept because closing one after a batch that
/// deleted elements waits in the kernel (docs/nftables-maps.md).
async fn write_maps(
    nft: &Nft,
    socket: Option<NftSocket>,
    change: MapsChange,
) -> (Option<NftSocket>, MapsChange, Result<(Writer, usize), ToolError>) {
    let (family, timeout) = (nft.family, nft.timeout);
    let (socket, change, result) = off_thread(move || match socket_or_open(socket, timeout) {
        Ok(mut s) => {
            let result = write_maps_netlink(&mut s, family, &change);
            let keep = !matches!(result, Err(WriteError::Kernel(_)));
            (keep.then_some(s), change, result)
        }
        Err(e) => (None, change, Err(e)),
    })
    .await;
    match result {
        Ok(bytes) => (socket, change, Ok((Writer::Netlink, bytes))),
        Err(WriteError::Encode(e)) => {
            tracing::warn!(error = %e, "nftables maps: netlink encoder cannot express the steps; using nft -f");
            let text = change.elements_text(family);
            let r = nft.apply(&text).await.map(|()| (Writer::Binary, text.len()));
            (socket, change, r)
        }
        Err(WriteError::Kernel(e)) => (socket, change, Err(e)),
    }
}

/// Deletes the affinity entries `stale` names, off the async threads, on `socket` (opened when
/// `None`); returns the socket to keep (none after a kernel error).
async fn purge_affinity(
    nft: &Nft,
    socket: Option<NftSocket>,
    stale: affinity::Stale,
) -> (Option<NftSocket>, Result<usize, ToolError>) {
    let (family, timeout) = (nft.family, nft.timeout);
    off_thread(move || {
        let mut s = match socket.map_or_else(|| NftSocket::open(timeout), Ok) {
            Ok(s) => s,
            Err(e) => return (None, Err(ToolError::Netlink(e.to_string()))),
        };
        match affinity::purge(&mut s, family, &stale) {
            Ok(n) => {
                tracing::debug!(deleted = n, "nftables maps: stale affinity entries deleted");
                (Some(s), Ok(n))
            }
            Err(e) => (None, Err(ToolError::Netlink(e.to_string()))),
        }
    })
    .await
}

/// Element steps of the maps layout as one batch (nothing to send: no batch).
fn write_maps_netlink(
    socket: &mut NftSocket,
    family: Family,
    change: &MapsChange,
) -> Result<usize, WriteError> {
    let MapsChange::Elements { delete, add } = change else {
        return Err(WriteError::Encode(netlink::EncodeError::Element(
            TABLE.into(),
            "a replacement is not element steps".into(),
        )));
    };
    if delete.is_empty() && add.is_empty() {
        return Ok(0);
    }
    let batch =
        netlink::encode_elements(family, delete, add, socket.next_start()).map_err(WriteError::Encode)?;
    socket.apply(&batch).map_err(|e| match e {
        crate::nftables::socket::NetlinkError::Refused { index, errno } => {
            let step = match batch.op_of_message(index) {
                Some(0) => "an element deletion",
                Some(_) => "an element addition",
                None => "the batch as a whole",
            };
            WriteError::Kernel(ToolError::Netlink(format!(
                "{}: {step}",
                std::io::Error::from_raw_os_error(errno)
            )))
        }
        other => kernel_error(other),
    })?;
    Ok(batch.bytes.len())
}
